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
/// `function`, composed over the grid's axes.
static void annotate(func::FuncOp function, const LayoutsPerAxis &layouts) {
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
      SmallVector<std::pair<StringAttr, LayoutAttr>> perAxis;
      for (auto &[axis, onAxis] : layouts) {
        LayoutAttr layout = onAxis->lookup(result);
        perAxis.emplace_back(axis, layout ? layout : replicated);
      }
      results.push_back(composeLayouts(function.getContext(), perAxis));
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
    // Layout rules hold per grid axis: every axis is checked on its own.
    FailureOr<GridLayouts> layouts = inferGridLayouts(module);
    if (failed(layouts))
      return signalPassFailure();
    if (!annotate)
      return;
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration())
        ::annotate(function, getFunctionLayoutsPerAxis(*layouts, function));
  }
};
} // namespace
