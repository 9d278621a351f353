//===- LayerToFusedLinear.cpp - Layers as fused_linear ops ----------------===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
/// Every linear layer is a fused_linear with the layer's epilogue.
struct LayerToFusedLinear
    : OpInterfaceRewritePattern<LinearLayerOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(LinearLayerOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (isa<FusedLinearOp>(op))
      return failure();
    auto fused = rewriter.replaceOpWithNewOp<FusedLinearOp>(
        op, op->getResult(0).getType(), op.getLayerParts());
    if (CpuMatmulAttr layout = getCpuMatmul(op))
      fused->setAttr(LaminaDialect::kCodegenAttrName, layout);
    return success();
  }
};
} // namespace

void mlir::lamina::populateLayerToFusedLinearPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerToFusedLinear>(patterns.getContext());
}
