//===- FuseEpilogues.cpp - Fuse epilogue chains into fused_linear ---------===//

#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAFUSEEPILOGUES
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// The only user of `value`, if it has exactly one use.
static Operation *getSoleUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

/// matmul → expand_shape splitting the last dim alone ([..., N] → [...,
/// heads, head_dim]) → interleaved lamina.rope, each the previous value's
/// only user: one fused_linear with the rope epilogue, viewed as the rope
/// was.
static FailureOr<FusedLinearOp> fuseRope(RewriterBase &rewriter,
                                         MatmulOp matmul,
                                         const LinearLayerParts &parts) {
  auto heads =
      dyn_cast_or_null<tensor::ExpandShapeOp>(getSoleUser(matmul.getResult()));
  if (!heads || !heads.getResultType().hasStaticShape())
    return failure();
  auto rope = dyn_cast_or_null<RopeOp>(getSoleUser(heads.getResult()));
  if (!rope || rope.getInput() != heads.getResult() ||
      rope.getPairs() != RopePairs::interleaved ||
      !rope.getCos().getType().hasStaticShape())
    return failure();
  SmallVector<ReassociationIndices> groups = heads.getReassociationIndices();
  int64_t rank = matmul.getType().getRank();
  if (heads.getResultType().getRank() != rank + 1 ||
      llvm::any_of(ArrayRef(groups).drop_back(),
                   [](const ReassociationIndices &group) {
                     return group.size() != 1;
                   }))
    return failure();
  // At the rope, where the tables are defined. (lamina.rope's verifier
  // already holds its tables to the heads view the fused op checks.)
  rewriter.setInsertionPoint(rope);
  auto fused = FusedLinearOp::create(rewriter, matmul.getLoc(),
                                     matmul.getType(), parts);
  fused.getRopeCosMutable().assign(rope.getCos());
  fused.getRopeSinMutable().assign(rope.getSin());
  Value view = tensor::ExpandShapeOp::create(
      rewriter, heads.getLoc(), heads.getResultType(), fused.getResult(),
      groups);
  rewriter.replaceOp(rope, view);
  rewriter.eraseOp(heads);
  rewriter.eraseOp(matmul);
  return fused;
}

FailureOr<FusedLinearOp>
mlir::lamina::fuseMatmulEpilogue(RewriterBase &rewriter, MatmulOp matmul,
                                 bool rope) {
  LinearLayerParts parts;
  parts.path =
      matmul.getPathAttr() ? matmul.getPathAttr() : rewriter.getStringAttr("");
  parts.input = matmul.getInput();
  parts.weight = matmul.getWeight();
  if (rope)
    if (FailureOr<FusedLinearOp> fused = fuseRope(rewriter, matmul, parts);
        succeeded(fused))
      return fused;
  Value tail = matmul.getResult();
  SmallVector<Operation *> absorbed;

  Operation *next = getSoleUser(tail);
  if (auto sync = dyn_cast_or_null<SyncOp>(next)) {
    if (sync.getSpec().getMode() == SyncMode::fwd_post) {
      parts.sync = sync.getSpec();
      tail = sync.getResult();
      absorbed.push_back(sync);
      next = getSoleUser(tail);
    }
  }
  if (auto biasAdd = dyn_cast_or_null<BiasAddOp>(next)) {
    if (biasAdd.getInput() == tail) {
      parts.bias = biasAdd.getBias();
      tail = biasAdd.getResult();
      absorbed.push_back(biasAdd);
      next = getSoleUser(tail);
    }
  }
  bool lnsData = isa<lns::NumType>(matmul.getType().getElementType());
  if (auto activation = dyn_cast_or_null<ActivationOp>(next);
      activation && !lnsData) {
    parts.activation = activation.getKindAttr();
    tail = activation.getResult();
    absorbed.push_back(activation);
    next = getSoleUser(tail);
  }
  if (auto dropout = dyn_cast_or_null<DropoutOp>(next); dropout && !lnsData) {
    parts.dropout = dropout.getConfig();
    parts.seed = dropout.getSeed();
    parts.rank = dropout.getRank();
    parts.offsetBase = dropout.getOffsetBase();
    tail = dropout.getResult();
    absorbed.push_back(dropout);
  }
  if (absorbed.empty())
    return failure();

  // The fused op replaces the last absorbed op, where every operand it takes
  // (the bias, the seed) is already defined.
  Operation *last = absorbed.back();
  rewriter.setInsertionPoint(last);
  auto fused =
      FusedLinearOp::create(rewriter, last->getLoc(), tail.getType(), parts);
  rewriter.replaceOp(last, fused.getResult());
  for (Operation *op : llvm::reverse(ArrayRef(absorbed).drop_back()))
    rewriter.eraseOp(op);
  rewriter.eraseOp(matmul);
  return fused;
}

namespace {
/// matmul → [fwd_post sync] → [bias_add] → [activation] → [dropout], each
/// step the sole user of the previous value, becomes one fused_linear (or,
/// with `rope`, matmul → heads view → rope).
struct FuseMatmulEpilogue : OpRewritePattern<MatmulOp> {
  FuseMatmulEpilogue(MLIRContext *context, bool rope)
      : OpRewritePattern(context), rope(rope) {}

  LogicalResult matchAndRewrite(MatmulOp matmul,
                                PatternRewriter &rewriter) const override {
    return fuseMatmulEpilogue(rewriter, matmul, rope);
  }

  bool rope;
};

struct LaminaFuseEpiloguesPass
    : mlir::lamina::impl::LaminaFuseEpiloguesBase<LaminaFuseEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseEpiloguePatterns(patterns, rope);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::lamina::populateFuseEpiloguePatterns(RewritePatternSet &patterns,
                                                bool rope) {
  patterns.add<FuseMatmulEpilogue>(patterns.getContext(), rope);
}
