//===- CheckLayouts.cpp - Reject sharded programs the spec calls wrong ----===//

#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACHECKLAYOUTS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// How the annotation names the collective of a sync's backward pass.
static std::string describeBackward(SyncAttr sync) {
  std::optional<layout::Collective> backward = layout::syncBackward(sync);
  if (!backward)
    return "identity";
  std::string text = stringifyCollectiveKind(backward->kind).str();
  if (backward->axis)
    text += " axis = " + std::to_string(*backward->axis);
  return text;
}

/// Writes `layouts` (values absent are replicated) onto the ops of
/// `function`.
static void annotate(func::FuncOp function,
                     const DenseMap<Value, LayoutAttr> &layouts) {
  Builder builder(function.getContext());
  LayoutAttr replicated = layout::replicated(function.getContext());
  function.walk([&](Operation *op) {
    if (auto sync = dyn_cast<SyncOp>(op))
      op->setAttr(LaminaDialect::kBackwardAttrName,
                  builder.getStringAttr(describeBackward(sync.getSpec())));
    if (auto layer = dyn_cast<LinearLayerOpInterface>(op);
        layer && layer.getLayerSync())
      op->setAttr(LaminaDialect::kBackwardAttrName, builder.getStringAttr(describeBackward(
                                         layer.getLayerSync())));
    if (op->getNumResults() == 0 ||
        !llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
      return;
    SmallVector<Attribute> results;
    for (Value result : op->getResults()) {
      LayoutAttr layout = layouts.lookup(result);
      results.push_back(layout ? layout : replicated);
    }
    op->setAttr(LaminaDialect::kResultLayoutsAttrName, builder.getArrayAttr(results));
  });
}

namespace {
struct LaminaCheckLayoutsPass
    : mlir::lamina::impl::LaminaCheckLayoutsBase<LaminaCheckLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> worldSize = getWorldSize(module);
    if (!worldSize || *worldSize == 1)
      return; // every value is whole on the only rank
    FailureOr<FunctionLayouts> layouts = inferLayouts(module);
    if (failed(layouts))
      return signalPassFailure();
    if (annotate)
      for (auto &[function, functionLayouts] : *layouts)
        ::annotate(function, functionLayouts);
  }
};
} // namespace
