//===- LayerToFusedLinear.cpp - Layers as fused_linear ops ----------------===//

#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
/// Every linear layer is a fused_linear with the layer's epilogue.
struct LayerToFusedLinear : RewritePattern {
  LayerToFusedLinear(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (isa<FusedLinearOp>(op))
      return failure();
    std::optional<LinearLayerParts> parts = getLinearLayerParts(op);
    if (!parts)
      return failure();
    rewriter.replaceOpWithNewOp<FusedLinearOp>(
        op, op->getResult(0).getType(), parts->path, parts->input,
        parts->weight, parts->sync, parts->bias, parts->activation,
        parts->dropout, parts->seed, parts->rank);
    return success();
  }
};
} // namespace

void mlir::lamina::populateLayerToFusedLinearPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerToFusedLinear>(patterns.getContext());
}
