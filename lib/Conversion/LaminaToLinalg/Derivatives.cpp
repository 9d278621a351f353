//===- Derivatives.cpp - The backward ops of lamina to linalg -------------===//
//
// activation_grad is one element-wise generic; softmax_grad a reduction
// along its dim and an element-wise generic; layer_norm_grad recomputes the
// row statistics as the forward does, then two row reductions (Σg, Σg·x̂),
// the element-wise dx and two column reductions (dweight, dbias).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "lamina/Conversion/LaminaToLinalg/EpilogueMath.h"
#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

/// The identity map of `rank` dims without dim `dropped`.
static AffineMap dropDim(MLIRContext *context, int64_t rank, int64_t dropped) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dropped)
      exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

/// An f32 tensor of `sizes` filled with zeros.
static Value zeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type elt) {
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elt);
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// Σ over `dim` of `body(args)` for the inputs `inputs` (all of the full
/// shape of `like`), one result per value `body` yields.
static SmallVector<Value>
reduceAlong(OpBuilder &b, Location loc, Value like, int64_t dim,
            ValueRange inputs, unsigned numResults,
            function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
                body) {
  auto type = cast<RankedTensorType>(like.getType());
  int64_t rank = type.getRank();
  MLIRContext *context = b.getContext();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  sizes.erase(sizes.begin() + dim);
  SmallVector<Value> inits;
  for (unsigned i = 0; i < numResults; ++i)
    inits.push_back(zeros(b, loc, sizes, type.getElementType()));
  SmallVector<AffineMap> maps(inputs.size(),
                              AffineMap::getMultiDimIdentityMap(rank, context));
  maps.append(numResults, dropDim(context, rank, dim));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[dim] = utils::IteratorType::reduction;
  SmallVector<Type> resultTypes(numResults, inits.front().getType());
  auto generic = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> terms =
            body(nb, nloc, args.take_front(inputs.size()));
        SmallVector<Value> sums;
        for (auto [term, acc] :
             llvm::zip_equal(terms, args.take_back(numResults)))
          sums.push_back(arith::AddFOp::create(nb, nloc, acc, term));
        linalg::YieldOp::create(nb, nloc, sums);
      });
  return SmallVector<Value>(generic.getResults().begin(), generic.getResults().end());
}

/// `body` element by element over `inputs` of the full shape of `like`
/// and `rows` of its shape without `dim` (broadcast along it).
static Value mapWithRows(
    OpBuilder &b, Location loc, Value like, int64_t dim, ValueRange inputs,
    ValueRange rows,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto type = cast<RankedTensorType>(like.getType());
  int64_t rank = type.getRank();
  MLIRContext *context = b.getContext();
  AffineMap full = AffineMap::getMultiDimIdentityMap(rank, context);
  SmallVector<AffineMap> maps(inputs.size(), full);
  maps.append(rows.size(), dropDim(context, rank, dim));
  maps.push_back(full);
  SmallVector<Value> operands(inputs);
  llvm::append_range(operands, rows);
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, like), type.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, operands, init, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       body(nb, nloc, args.drop_back()));
             })
      .getResult(0);
}

namespace {
struct ActivationGradToLinalg : OpRewritePattern<ActivationGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationGradOp op,
                                PatternRewriter &rewriter) const override {
    Value result = mapWithRows(
        rewriter, op.getLoc(), op.getInput(), /*dim=*/0,
        ValueRange{op.getInput(), op.getCotangent()}, ValueRange{},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return buildActivationDerivative(b, loc, op.getKind(), args[0],
                                           args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SoftmaxGradToLinalg : OpRewritePattern<SoftmaxGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t dim = op.getDim();
    Value y = op.getOutput(), dy = op.getCotangent();
    Value dot = reduceAlong(rewriter, loc, y, dim, ValueRange{y, dy}, 1,
                            [](OpBuilder &b, Location loc, ValueRange args) {
                              return SmallVector<Value>{
                                  arith::MulFOp::create(b, loc, args[0],
                                                        args[1])};
                            })
                    .front();
    Value dx = mapWithRows(
        rewriter, loc, y, dim, ValueRange{y, dy}, ValueRange{dot},
        [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(b, loc, args[1], args[2]);
          return arith::MulFOp::create(b, loc, args[0], shifted);
        });
    rewriter.replaceOp(op, dx);
    return success();
  }
};

struct LayerNormGradToLinalg : OpRewritePattern<LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput(), dy = op.getCotangent(), weight = op.getWeight();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank(), last = rank - 1;
    Type f32 = type.getElementType();
    auto constant = [&](OpBuilder &b, Location loc, double value) -> Value {
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, value));
    };
    double count = static_cast<double>(type.getShape().back());
    auto identity = [](OpBuilder &, Location, ValueRange args) {
      return SmallVector<Value>{args[0]};
    };

    MLIRContext *context = rewriter.getContext();
    AffineMap full = AffineMap::getMultiDimIdentityMap(rank, context);
    AffineMap row = dropDim(context, rank, last);
    AffineMap feature =
        AffineMap::get(rank, 0, getAffineDimExpr(last, context));
    SmallVector<OpFoldResult> rowSizes = tensor::getMixedSizes(rewriter, loc, x);
    rowSizes.pop_back();
    SmallVector<utils::IteratorType> rowReduction(
        rank, utils::IteratorType::parallel);
    rowReduction[last] = utils::IteratorType::reduction;

    // The forward's statistics: mean = Σx/C, then Σ(x − mean)².
    Value sums = reduceAlong(rewriter, loc, x, last, x, 1, identity).front();
    Value mean = mapWithRows(
        rewriter, loc, sums, /*dim=*/0, ValueRange{sums}, ValueRange{},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::DivFOp::create(b, loc, args[0],
                                       constant(b, loc, count));
        });
    Value squares =
        linalg::GenericOp::create(
            rewriter, loc, mean.getType(), ValueRange{x, mean},
            zeros(rewriter, loc, rowSizes, f32),
            ArrayRef<AffineMap>{full, row, row}, rowReduction,
            [](OpBuilder &b, Location loc, ValueRange args) {
              Value d = arith::SubFOp::create(b, loc, args[0], args[1]);
              Value d2 = arith::MulFOp::create(b, loc, d, d);
              Value sum = arith::AddFOp::create(b, loc, args[2], d2);
              linalg::YieldOp::create(b, loc, sum);
            })
            .getResult(0);
    double epsilon = op.getEpsilon().convertToDouble();
    auto scaleOf = [&](OpBuilder &b, Location loc, Value q) -> Value {
      Value variance = arith::DivFOp::create(b, loc, q, constant(b, loc, count));
      Value shifted =
          arith::AddFOp::create(b, loc, variance, constant(b, loc, epsilon));
      return math::RsqrtOp::create(b, loc, shifted);
    };
    // g = dy·w (or dy); Σg and Σg·x̂ per row, each a reduction of its own
    // (a generic with one result vectorizes as a row reduction).
    Value rowSumsOf[2];
    for (bool timesXHat : {false, true}) {
      SmallVector<Value> ins = {x, dy, mean, squares};
      SmallVector<AffineMap> maps = {full, full, row, row};
      if (weight) {
        ins.push_back(weight);
        maps.push_back(feature);
      }
      maps.push_back(row);
      auto generic = linalg::GenericOp::create(
          rewriter, loc, mean.getType(), ins,
          zeros(rewriter, loc, rowSizes, f32), maps, rowReduction,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            Value g = weight ? arith::MulFOp::create(b, loc, args[1], args[4])
                                   .getResult()
                             : args[1];
            if (timesXHat) {
              Value r = scaleOf(b, loc, args[3]);
              Value xHat = arith::MulFOp::create(
                  b, loc, arith::SubFOp::create(b, loc, args[0], args[2]), r);
              g = arith::MulFOp::create(b, loc, g, xHat);
            }
            linalg::YieldOp::create(
                b, loc,
                arith::AddFOp::create(b, loc, args.back(), g).getResult());
          });
      rowSumsOf[timesXHat] = generic.getResult(0);
    }
    // dx = r·(g − Σg/C − x̂·Σg·x̂/C).
    Value dx;
    {
      SmallVector<Value> ins = {x, dy, mean, squares, rowSumsOf[0],
                                rowSumsOf[1]};
      SmallVector<AffineMap> maps = {full, full, row, row, row, row};
      if (weight) {
        ins.push_back(weight);
        maps.push_back(feature);
      }
      maps.push_back(full);
      Value init = tensor::EmptyOp::create(
          rewriter, loc, tensor::getMixedSizes(rewriter, loc, x), f32);
      SmallVector<utils::IteratorType> iterators(rank,
                                                 utils::IteratorType::parallel);
      dx = linalg::GenericOp::create(
               rewriter, loc, type, ins, init, maps, iterators,
               [&](OpBuilder &b, Location loc, ValueRange args) {
                 Value r = scaleOf(b, loc, args[3]);
                 Value xHat = arith::MulFOp::create(
                     b, loc, arith::SubFOp::create(b, loc, args[0], args[2]),
                     r);
                 Value g = weight
                               ? arith::MulFOp::create(b, loc, args[1], args[6])
                                     .getResult()
                               : args[1];
                 Value n = constant(b, loc, count);
                 Value meanG = arith::DivFOp::create(b, loc, args[4], n);
                 Value meanGX = arith::DivFOp::create(b, loc, args[5], n);
                 Value centred = arith::SubFOp::create(
                     b, loc, arith::SubFOp::create(b, loc, g, meanG),
                     arith::MulFOp::create(b, loc, xHat, meanGX));
                 linalg::YieldOp::create(
                     b, loc, arith::MulFOp::create(b, loc, r, centred).getResult());
               })
               .getResult(0);
    }
    // dweight = Σ_rows dy·x̂, dbias = Σ_rows dy.
    Value columnSums[2];
    {
      SmallVector<utils::IteratorType> iterators(rank,
                                                 utils::IteratorType::reduction);
      iterators[last] = utils::IteratorType::parallel;
      SmallVector<OpFoldResult> featureSizes = {
          tensor::getMixedSize(rewriter, loc, x, last)};
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{op.getWeightGrad().getType(),
                                   op.getBiasGrad().getType()},
          ValueRange{x, dy, mean, squares},
          ValueRange{zeros(rewriter, loc, featureSizes, f32),
                     zeros(rewriter, loc, featureSizes, f32)},
          ArrayRef<AffineMap>{full, full, row, row, feature, feature},
          iterators, [&](OpBuilder &b, Location loc, ValueRange args) {
            Value r = scaleOf(b, loc, args[3]);
            Value xHat = arith::MulFOp::create(
                b, loc, arith::SubFOp::create(b, loc, args[0], args[2]), r);
            Value dw = arith::AddFOp::create(
                b, loc, args[4], arith::MulFOp::create(b, loc, args[1], xHat));
            Value db = arith::AddFOp::create(b, loc, args[5], args[1]);
            linalg::YieldOp::create(b, loc, ValueRange{dw, db});
          });
      columnSums[0] = generic.getResult(0);
      columnSums[1] = generic.getResult(1);
    }
    rewriter.replaceOp(op, ValueRange{dx, columnSums[0], columnSums[1]});
    return success();
  }
};
} // namespace

void mlir::lamina::populateDerivativesToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ActivationGradToLinalg, SoftmaxGradToLinalg,
               LayerNormGradToLinalg>(patterns.getContext());
}
