//===- Normalization.cpp - LayerNorm and softmax to linalg ----------------===//
//
// `lamina.layer_norm` becomes three row reductions and one element-wise
// generic, in nn.LayerNorm's order of operations: Σx, mean = Σx / C,
// Σ(x − mean)², then (x − mean) · rsqrt(Σ(x − mean)² / C + eps) · w + b.
// `lamina.softmax` becomes `linalg.softmax`, which the CPU pipeline
// decomposes with the other aggregate ops.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
/// The affine maps and iterators a normalization over the last dim uses.
struct RowMaps {
  RowMaps(MLIRContext *context, int64_t rank)
      : full(AffineMap::getMultiDimIdentityMap(rank, context)),
        last(AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context))),
        perRow(AffineMap::getMultiDimIdentityMap(rank - 1, context)) {
    SmallVector<AffineExpr> leading;
    for (int64_t d = 0; d + 1 < rank; ++d)
      leading.push_back(getAffineDimExpr(d, context));
    row = AffineMap::get(rank, 0, leading, context);
    reduction.assign(rank - 1, utils::IteratorType::parallel);
    reduction.push_back(utils::IteratorType::reduction);
    parallel.assign(rank, utils::IteratorType::parallel);
    rowParallel.assign(rank - 1, utils::IteratorType::parallel);
  }
  AffineMap full, row, last, perRow;
  SmallVector<utils::IteratorType> reduction, parallel, rowParallel;
};

struct LayerNormToLinalg : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    Type f32 = type.getElementType();
    RowMaps maps(rewriter.getContext(), rank);

    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, x);
    OpFoldResult features = sizes.back();
    SmallVector<OpFoldResult> rowSizes(sizes.begin(), sizes.end() - 1);
    Value count;
    if (std::optional<int64_t> c = getConstantIntValue(features))
      count = arith::ConstantOp::create(
          rewriter, loc, rewriter.getFloatAttr(f32, static_cast<double>(*c)));
    else
      count = arith::UIToFPOp::create(
          rewriter, loc, f32,
          arith::IndexCastUIOp::create(
              rewriter, loc, rewriter.getI64Type(),
              getValueOrCreateConstantIndexOp(rewriter, loc, features)));
    Value zero =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(f32));
    auto rowAccumulator = [&]() -> Value {
      Value init = tensor::EmptyOp::create(rewriter, loc, rowSizes, f32);
      return linalg::FillOp::create(rewriter, loc, zero, init).getResult(0);
    };
    Type rowsType = RankedTensorType::get(type.getShape().drop_back(), f32);

    // Σx over the last dim.
    Value sums =
        linalg::GenericOp::create(
            rewriter, loc, rowsType, x, rowAccumulator(),
            ArrayRef<AffineMap>{maps.full, maps.row}, maps.reduction,
            [](OpBuilder &b, Location loc, ValueRange args) {
              Value sum = arith::AddFOp::create(b, loc, args[1], args[0]);
              linalg::YieldOp::create(b, loc, sum);
            })
            .getResult(0);
    Value mean =
        linalg::GenericOp::create(
            rewriter, loc, rowsType, sums, sums,
            ArrayRef<AffineMap>{maps.perRow, maps.perRow}, maps.rowParallel,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value quotient = arith::DivFOp::create(b, loc, args[0], count);
              linalg::YieldOp::create(b, loc, quotient);
            })
            .getResult(0);
    // Σ(x − mean)²: the biased variance times C.
    Value squares =
        linalg::GenericOp::create(
            rewriter, loc, rowsType, ValueRange{x, mean}, rowAccumulator(),
            ArrayRef<AffineMap>{maps.full, maps.row, maps.row},
            maps.reduction,
            [](OpBuilder &b, Location loc, ValueRange args) {
              Value d = arith::SubFOp::create(b, loc, args[0], args[1]);
              Value d2 = arith::MulFOp::create(b, loc, d, d);
              Value sum = arith::AddFOp::create(b, loc, args[2], d2);
              linalg::YieldOp::create(b, loc, sum);
            })
            .getResult(0);

    Value weight = op.getWeight(), bias = op.getBias();
    SmallVector<Value> inputs = {x, mean, squares};
    SmallVector<AffineMap> indexing = {maps.full, maps.row, maps.row};
    for (Value parameter : {weight, bias})
      if (parameter) {
        inputs.push_back(parameter);
        indexing.push_back(maps.last);
      }
    indexing.push_back(maps.full);
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes, f32);
    Value epsilon = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getFloatAttr(f32, op.getEpsilon().convertToDouble()));
    Value normalized =
        linalg::GenericOp::create(
            rewriter, loc, type, inputs, init, indexing, maps.parallel,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value variance = arith::DivFOp::create(b, loc, args[2], count);
              Value shifted = arith::AddFOp::create(b, loc, variance, epsilon);
              Value scale = math::RsqrtOp::create(b, loc, shifted);
              Value d = arith::SubFOp::create(b, loc, args[0], args[1]);
              Value y = arith::MulFOp::create(b, loc, d, scale);
              unsigned next = 3;
              if (weight)
                y = arith::MulFOp::create(b, loc, y, args[next++]);
              if (bias)
                y = arith::AddFOp::create(b, loc, y, args[next++]);
              linalg::YieldOp::create(b, loc, y);
            })
            .getResult(0);
    rewriter.replaceOp(op, normalized);
    return success();
  }
};

struct SoftmaxToLinalg : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    Value init = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, x),
        op.getType().getElementType());
    rewriter.replaceOpWithNewOp<linalg::SoftmaxOp>(op, op.getType(), x, init,
                                                   op.getDim());
    return success();
  }
};
} // namespace

void mlir::lamina::populateNormalizationToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerNormToLinalg, SoftmaxToLinalg>(patterns.getContext());
}
