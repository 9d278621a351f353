//===- CpuLowerVectors.cpp - Vector lowering of the scheduled tiles -------===//

#include "lamina/Codegen/Passes.h"
#include "lamina/Support/TransformScript.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACPULOWERVECTORS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
/// Lowers the vector ops of the scheduled tiles (after bufferization); 8×8
/// f32 transposes become AVX2 shuffles and blends (inline asm: the JIT
/// initializes the native asm parser). Row reductions of several rows at
/// once (a tile of a loss's per-row statistics) become one reduction per
/// row.
constexpr StringLiteral kLowerVectorsScript = R"mlir(
module attributes {transform.with_named_sequence} {
transform.named_sequence @lower_vectors(%root: !transform.any_op {transform.readonly}) {
  %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
  transform.apply_patterns to %f { transform.apply_patterns.canonicalization } : !transform.any_op
  transform.apply_cse to %f : !transform.any_op
  transform.apply_patterns to %f {
    transform.apply_patterns.vector.lower_contraction lowering_strategy = outerproduct
    transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = innerreduction
  } : !transform.any_op
  transform.apply_patterns to %f {
    transform.apply_patterns.vector.lower_outerproduct
    transform.apply_patterns.vector.lower_transpose avx2_lowering_strategy = true
    transform.apply_patterns.vector.lower_broadcast
  } : !transform.any_op
  transform.apply_patterns to %f {
    transform.apply_patterns.vector.transfer_permutation_patterns
    transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
  } : !transform.any_op
  transform.apply_patterns to %f {
    transform.apply_patterns.vector.lower_shape_cast
  } : !transform.any_op
  // Apart: canonicalization folds a lowered unit-dim shape cast (a column
  // of a tile read as a row, vector<32x1> to vector<1x32>) back into one,
  // and the two in one set never reach a fixpoint.
  transform.apply_patterns to %f { transform.apply_patterns.canonicalization } : !transform.any_op
  transform.apply_cse to %f : !transform.any_op
  transform.yield
}
}
)mlir";

/// A transpose of 16-bit floats (a bf16 weight's tiles, packed) only moves
/// bits: it is done on i16, so that the element shuffles it lowers to are
/// integer ones. LLVM's x86 back end moves a bf16 vector element through
/// f32 and back on a CPU without AVX512-BF16, by a compiler-rt call
/// (__truncsfbf2) that the JIT's process does not have.
struct TransposeHalfFloatsAsIntegers
    : OpRewritePattern<vector::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    VectorType type = transpose.getSourceVectorType();
    auto element = dyn_cast<FloatType>(type.getElementType());
    if (!element || element.getWidth() != 16)
      return failure();
    Location loc = transpose.getLoc();
    Value bits = vector::BitCastOp::create(
        rewriter, loc, type.clone(rewriter.getI16Type()),
        transpose.getVector());
    Value moved = vector::TransposeOp::create(rewriter, loc, bits,
                                              transpose.getPermutation());
    rewriter.replaceOpWithNewOp<vector::BitCastOp>(
        transpose, transpose.getResultVectorType(), moved);
    return success();
  }
};

struct LaminaCpuLowerVectorsPass
    : mlir::lamina::impl::LaminaCpuLowerVectorsBase<
          LaminaCpuLowerVectorsPass> {
  void runOnOperation() override {
    // Before the script and after it: its permuted transfers make
    // transposes of their own, which the LLVM lowering then expands.
    if (failed(transposeHalfFloatsAsIntegers()) ||
        failed(mlir::lamina::applyTransformScript(
            getOperation(), kLowerVectorsScript, "lower_vectors")) ||
        failed(transposeHalfFloatsAsIntegers()))
      signalPassFailure();
  }

  LogicalResult transposeHalfFloatsAsIntegers() {
    RewritePatternSet patterns(&getContext());
    patterns.add<TransposeHalfFloatsAsIntegers>(&getContext());
    return applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};
} // namespace
