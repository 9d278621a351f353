//===- Rope.cpp - lamina.rope to one linalg.generic -----------------------===//
//
// The input [..., D] is viewed with its pairs on a dim of their own,
// [..., D/2, 2] (interleaved) or [..., 2, D/2] (halves); the pairs' first
// and second elements are two slices a and b [..., D/2] of that view, and
// one generic over it writes a·cos − b·sin where the pair dim is 0 and
// a·sin + b·cos where it is 1, the tables broadcast by their indexing maps.
// Every map is a projected permutation: the generic vectorizes along D/2.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct RopeToLinalg : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    int64_t rank = type.getRank();
    int64_t half = type.getShape().back() / 2;
    bool interleaved = op.getPairs() == RopePairs::interleaved;
    // The view's dims: the input's leading dims, then the angle dim and the
    // pair dim in the order the pairs lie in memory.
    int64_t angleDim = interleaved ? rank - 1 : rank;
    int64_t pairDim = interleaved ? rank : rank - 1;
    SmallVector<int64_t> viewShape(type.getShape().drop_back());
    viewShape.append(interleaved ? SmallVector<int64_t>{half, 2}
                                 : SmallVector<int64_t>{2, half});
    SmallVector<ReassociationIndices> groups;
    for (int64_t dim = 0; dim + 1 < rank; ++dim)
      groups.push_back({dim});
    groups.push_back({rank - 1, rank});
    auto viewType = RankedTensorType::get(viewShape, type.getElementType());
    Value view = tensor::ExpandShapeOp::create(rewriter, loc, viewType,
                                               op.getInput(), groups);

    // a and b: the pair dim at 0 and 1, dropped.
    SmallVector<int64_t> pieceShape(type.getShape().drop_back());
    pieceShape.push_back(half);
    auto pieceType = RankedTensorType::get(pieceShape, type.getElementType());
    auto piece = [&](int64_t index) -> Value {
      SmallVector<int64_t> offsets(rank + 1, 0), sizes(viewShape),
          strides(rank + 1, 1);
      offsets[pairDim] = index;
      sizes[pairDim] = 1;
      return tensor::ExtractSliceOp::create(rewriter, loc, pieceType, view,
                                            ValueRange(), ValueRange(),
                                            ValueRange(), offsets, sizes,
                                            strides);
    };
    Value a = piece(0), b = piece(1);

    SmallVector<AffineExpr> pieceExprs, tableExprs;
    ArrayRef<int64_t> tables = op.getCos().getType().getShape();
    for (int64_t dim = 0; dim + 1 < rank; ++dim) {
      pieceExprs.push_back(getAffineDimExpr(dim, context));
      tableExprs.push_back(tables[dim] == 1 && type.getDimSize(dim) != 1
                               ? getAffineConstantExpr(0, context)
                               : getAffineDimExpr(dim, context));
    }
    pieceExprs.push_back(getAffineDimExpr(angleDim, context));
    tableExprs.push_back(getAffineDimExpr(angleDim, context));
    AffineMap pieceMap = AffineMap::get(rank + 1, 0, pieceExprs, context);
    AffineMap tableMap = AffineMap::get(rank + 1, 0, tableExprs, context);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank + 1, context);

    Value init = tensor::EmptyOp::create(rewriter, loc, viewShape,
                                         type.getElementType());
    auto rotate = linalg::GenericOp::create(
        rewriter, loc, viewType, ValueRange{a, b, op.getCos(), op.getSin()},
        init, ArrayRef<AffineMap>{pieceMap, pieceMap, tableMap, tableMap,
                                  identity},
        SmallVector<utils::IteratorType>(rank + 1,
                                         utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value first = arith::SubFOp::create(
              nb, nloc, arith::MulFOp::create(nb, nloc, args[0], args[2]),
              arith::MulFOp::create(nb, nloc, args[1], args[3]));
          Value second = arith::AddFOp::create(
              nb, nloc, arith::MulFOp::create(nb, nloc, args[0], args[3]),
              arith::MulFOp::create(nb, nloc, args[1], args[2]));
          Value index = linalg::IndexOp::create(nb, nloc, pairDim);
          Value isFirst = arith::CmpIOp::create(
              nb, nloc, arith::CmpIPredicate::eq, index,
              arith::ConstantIndexOp::create(nb, nloc, 0));
          linalg::YieldOp::create(
              nb, nloc,
              arith::SelectOp::create(nb, nloc, isFirst, first, second)
                  .getResult());
        });
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, type, rotate.getResult(0), groups);
    return success();
  }
};
} // namespace

void mlir::lamina::populateRopeToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RopeToLinalg>(patterns.getContext());
}
