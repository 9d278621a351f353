//===- CheckLayouts.cpp - Reject sharded programs the spec calls wrong ----===//

#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACHECKLAYOUTS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaCheckLayoutsPass
    : mlir::lamina::impl::LaminaCheckLayoutsBase<LaminaCheckLayoutsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> worldSize = getWorldSize(module);
    if (!worldSize || *worldSize == 1)
      return; // every value is whole on the only rank
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration() && failed(inferLayouts(function)))
        return signalPassFailure();
  }
};
} // namespace
