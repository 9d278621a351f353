//===- Decompose.cpp - Split layer ops into their primitive pieces --------===//

#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINADECOMPOSE
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
/// Any linear layer → [fwd_pre sync] → matmul → [sync] → [bias_add] → [activation] →
/// [dropout], every piece keeping the layer's path (and the last one its
/// pipeline cut).
struct DecomposeLinearLayer
    : OpInterfaceRewritePattern<LinearLayerOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(LinearLayerOpInterface op,
                                PatternRewriter &rewriter) const override {
    LinearLayerParts parts = op.getLayerParts();
    Location loc = op->getLoc();
    Type type = op->getResult(0).getType();
    // A fwd_pre sync acts on the layer's input, every other on its output.
    bool onInput = parts.sync && parts.sync.getMode() == SyncMode::fwd_pre;
    Value input = parts.input;
    if (onInput)
      input = SyncOp::create(rewriter, loc, input.getType(), input,
                             parts.sync, parts.path);
    Value value = MatmulOp::create(rewriter, loc, type, input, parts.weight,
                                   parts.path);
    if (parts.sync && !onInput)
      value = SyncOp::create(rewriter, loc, type, value, parts.sync,
                             parts.path);
    if (parts.bias)
      value = BiasAddOp::create(rewriter, loc, type, value, parts.bias,
                                parts.path);
    if (parts.activation)
      value = ActivationOp::create(rewriter, loc, type, parts.activation,
                                   value, parts.path);
    if (parts.dropout)
      value = DropoutOp::create(rewriter, loc, type, value, parts.dropout,
                                parts.seed, parts.rank,
                                parts.offsetBase, parts.path);
    // A pipeline stage that ended after the layer ends after its last piece.
    if (op->hasAttr(LaminaDialect::kPipelineCutAttrName))
      value.getDefiningOp()->setAttr(LaminaDialect::kPipelineCutAttrName,
                                     rewriter.getUnitAttr());
    rewriter.replaceOp(op, value);
    return success();
  }
};

struct LaminaDecomposePass
    : mlir::lamina::impl::LaminaDecomposeBase<LaminaDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateLaminaDecomposePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::lamina::populateLaminaDecomposePatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeLinearLayer>(patterns.getContext());
}
