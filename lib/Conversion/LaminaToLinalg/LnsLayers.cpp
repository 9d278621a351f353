//===- LnsLayers.cpp - Layers on LNS numbers ------------------------------===//
//
// A layer whose numbers are LNS lowers to the lns dialect's own linear op
// and additions (lowered later by convert-lns-to-arith); the float lowering
// of the same ops leaves such layers alone.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lns/IR/Lns.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

static bool holdsLns(Value value) {
  return isa<lns::NumType>(getElementTypeOrSelf(value.getType()));
}

namespace {
struct FusedLinearToLnsLinear : OpRewritePattern<FusedLinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedLinearOp op,
                                PatternRewriter &rewriter) const override {
    if (!holdsLns(op.getInput()))
      return failure();
    rewriter.replaceOpWithNewOp<lns::LinearOp>(
        op, op.getType(), op.getInput(), op.getWeight(), op.getBias());
    return success();
  }
};

struct MatmulToLnsLinear : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!holdsLns(op.getInput()))
      return failure();
    rewriter.replaceOpWithNewOp<lns::LinearOp>(
        op, op.getType(), op.getInput(), op.getWeight(), Value());
    return success();
  }
};

/// The bias broadcast over the leading dims, then added element-wise.
struct BiasAddToLnsAdd : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp op,
                                PatternRewriter &rewriter) const override {
    if (!holdsLns(op.getInput()))
      return failure();
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type biasElt = getElementTypeOrSelf(op.getBias().getType());
    Value init = emptyLike(rewriter, loc, op.getInput(), biasElt);
    auto leading = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank() - 1));
    Value bias = linalg::BroadcastOp::create(rewriter, loc, op.getBias(), init,
                                             leading)
                     .getResult()[0];
    rewriter.replaceOpWithNewOp<lns::AddOp>(op, op.getInput(), bias);
    return success();
  }
};
} // namespace

void mlir::lamina::populateLnsLayersToLnsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FusedLinearToLnsLinear, MatmulToLnsLinear, BiasAddToLnsAdd>(
      patterns.getContext());
}
