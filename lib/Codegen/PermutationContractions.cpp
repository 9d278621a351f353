//===- PermutationContractions.cpp - Contractions that only permute -------===//
//
// A contraction of a vector with a constant permutation matrix along its
// last dim moves lanes and sums nothing: a rotary epilogue's pair partners
// (partner[n] = Σ_j acc[j]·P[n, j], P exchanging the lanes of each pair) are
// one shuffle of the accumulator, not a row of FMAs per lane.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

/// The constant square matrix `value` holds (an arith.constant vector, or
/// the whole of a constant tensor read at its origin), if any.
static DenseElementsAttr getConstantMatrix(Value value) {
  DenseElementsAttr matrix;
  if (matchPattern(value, m_Constant(&matrix)))
    return matrix;
  auto read = value.getDefiningOp<vector::TransferReadOp>();
  if (!read || read.getVectorType().getShape() !=
                   cast<ShapedType>(read.getBase().getType()).getShape() ||
      !read.getPermutationMap().isMinorIdentity() ||
      !llvm::all_of(read.getIndices(),
                    [](Value index) { return isZeroInteger(index); }) ||
      !matchPattern(read.getBase(), m_Constant(&matrix)))
    return {};
  return matrix;
}

/// For a permutation matrix P (one 1 per row, zeros elsewhere), the column
/// of each row's 1.
static std::optional<SmallVector<int64_t>>
getPermutation(DenseElementsAttr matrix) {
  auto type = cast<ShapedType>(matrix.getType());
  if (type.getRank() != 2 || type.getDimSize(0) != type.getDimSize(1) ||
      !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  int64_t size = type.getDimSize(0);
  SmallVector<int64_t> columns(size, -1);
  for (auto [index, value] : llvm::enumerate(matrix.getValues<APFloat>())) {
    if (value.isZero())
      continue;
    int64_t row = index / size;
    if (!value.isExactlyValue(1.0) || columns[row] != -1)
      return std::nullopt;
    columns[row] = index % size;
  }
  if (llvm::is_contained(columns, -1))
    return std::nullopt;
  return columns;
}

namespace {
/// out[..., n] = Σ_j x[..., j]·P[n, j] (+ acc) with P a constant
/// permutation matrix: x's lanes shuffled (+ acc).
struct PermutationContractionToShuffle
    : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getKind() != vector::CombiningKind::ADD)
      return failure();
    auto resultType = dyn_cast<VectorType>(op.getResultType());
    DenseElementsAttr matrix = getConstantMatrix(op.getRhs());
    std::optional<SmallVector<int64_t>> permutation =
        matrix ? getPermutation(matrix) : std::nullopt;
    if (!resultType || !permutation || op.getLhsType() != resultType)
      return failure();
    // x over (d0, ..., dk-1, j), P over (n, j), out over (d0, ..., n): the
    // result's last dim is P's rows, x's last dim the one reduction.
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    unsigned rank = resultType.getRank();
    MLIRContext *context = op.getContext();
    AffineExpr n = getAffineDimExpr(rank - 1, context);
    AffineExpr j = getAffineDimExpr(rank, context);
    SmallVector<AffineExpr> leading, xExprs;
    for (unsigned dim = 0; dim + 1 < rank; ++dim)
      leading.push_back(getAffineDimExpr(dim, context));
    xExprs = leading;
    xExprs.push_back(j);
    SmallVector<AffineExpr> outExprs = leading;
    outExprs.push_back(n);
    if (maps[0] != AffineMap::get(rank + 1, 0, xExprs, context) ||
        maps[1] != AffineMap::get(rank + 1, 0, {n, j}, context) ||
        maps[2] != AffineMap::get(rank + 1, 0, outExprs, context))
      return failure();

    Location loc = op.getLoc();
    int64_t lanes = resultType.getShape().back();
    int64_t count = resultType.getNumElements();
    SmallVector<int64_t> mask(count);
    for (int64_t index = 0; index < count; ++index)
      mask[index] = index - index % lanes + (*permutation)[index % lanes];
    auto flatType = VectorType::get({count}, resultType.getElementType());
    Value flat =
        vector::ShapeCastOp::create(rewriter, loc, flatType, op.getLhs());
    Value shuffled =
        vector::ShuffleOp::create(rewriter, loc, flat, flat, mask);
    Value moved =
        vector::ShapeCastOp::create(rewriter, loc, resultType, shuffled);
    if (!matchPattern(op.getAcc(), m_AnyZeroFloat()))
      moved = arith::AddFOp::create(rewriter, loc, moved, op.getAcc());
    rewriter.replaceOp(op, moved);
    return success();
  }
};
} // namespace

void mlir::lamina::cpu::populatePermutationContractionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<PermutationContractionToShuffle>(patterns.getContext());
}
