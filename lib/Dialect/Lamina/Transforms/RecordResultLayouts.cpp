//===- RecordResultLayouts.cpp - Sharded results on the signature ---------===//

#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINARECORDRESULTLAYOUTS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaRecordResultLayoutsPass
    : mlir::lamina::impl::LaminaRecordResultLayoutsBase<
          LaminaRecordResultLayoutsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> worldSize = getWorldSize(module);
    // One rank holds every value whole; lamina-partition recorded its own.
    if (!worldSize || *worldSize == 1 || isPartitioned(module))
      return;
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isDeclaration())
        continue;
      FailureOr<DenseMap<Value, LayoutAttr>> layouts = inferLayouts(function);
      if (failed(layouts))
        return signalPassFailure();
      Operation *terminator = function.getBody().back().getTerminator();
      for (auto [index, value] : llvm::enumerate(terminator->getOperands())) {
        LayoutAttr layout = layouts->lookup(value);
        if (layout && layout.getKind() == LayoutKind::sharded)
          function.setResultAttr(index, LaminaDialect::kLayoutAttrName,
                                 layout);
      }
    }
  }
};
} // namespace
