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
    FailureOr<FunctionLayouts> plans = inferLayouts(module);
    if (failed(plans))
      return signalPassFailure();
    for (auto &[function, layouts] : *plans) {
      Operation *terminator = function.getBody().back().getTerminator();
      for (auto [index, value] : llvm::enumerate(terminator->getOperands())) {
        LayoutAttr layout = layouts.lookup(value);
        if (layout && layout.getKind() == LayoutKind::sharded)
          function.setResultAttr(index, LaminaDialect::kLayoutAttrName,
                                 layout);
      }
    }
  }
};
} // namespace
