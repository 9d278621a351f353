//===- FuseEpilogues.cpp - Fuse epilogue chains into fused_linear ---------===//

#include "lamina/Lamina/Transforms/Passes.h"

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

FailureOr<FusedLinearOp>
mlir::lamina::fuseMatmulEpilogue(RewriterBase &rewriter, MatmulOp matmul) {
  LinearLayerParts parts;
  parts.path =
      matmul.getPathAttr() ? matmul.getPathAttr() : rewriter.getStringAttr("");
  parts.input = matmul.getInput();
  parts.weight = matmul.getWeight();
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
/// step the sole user of the previous value, becomes one fused_linear.
struct FuseMatmulEpilogue : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp matmul,
                                PatternRewriter &rewriter) const override {
    return fuseMatmulEpilogue(rewriter, matmul);
  }
};

struct LaminaFuseEpiloguesPass
    : mlir::lamina::impl::LaminaFuseEpiloguesBase<LaminaFuseEpiloguesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseEpiloguePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::lamina::populateFuseEpiloguePatterns(RewritePatternSet &patterns) {
  patterns.add<FuseMatmulEpilogue>(patterns.getContext());
}
