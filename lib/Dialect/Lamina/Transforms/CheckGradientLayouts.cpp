//===- CheckGradientLayouts.cpp - Reject wrong backward layouts -----------===//

#include "lamina/Lamina/Analysis/GradientLayouts.h"
#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACHECKGRADIENTLAYOUTS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaCheckGradientLayoutsPass
    : mlir::lamina::impl::LaminaCheckGradientLayoutsBase<
          LaminaCheckGradientLayoutsPass> {
  using LaminaCheckGradientLayoutsBase::LaminaCheckGradientLayoutsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> worldSize = getWorldSize(module);
    if (!worldSize || *worldSize == 1)
      return; // one rank: every gradient is whole
    // Per grid axis, as the forward layouts are.
    FailureOr<GridLayouts> layouts = inferGridLayouts(module);
    if (failed(layouts))
      return signalPassFailure();
    // A called function is walked from each call, with the gradients of
    // its results there.
    llvm::SmallPtrSet<Operation *, 8> called = getCalledFunctions(module);
    for (auto &[axis, functions] : *layouts) {
      DenseMap<Value, LayoutAttr> forward;
      for (auto &onFunction : llvm::make_second_range(functions))
        forward.insert(onFunction.begin(), onFunction.end());
      for (func::FuncOp function : llvm::make_first_range(functions))
        if (!called.contains(function) &&
            failed(inferGradientLayouts(function, forward, nullptr,
                                        llvm::to_vector(constants), axis)))
          return signalPassFailure();
    }
  }
};
} // namespace
