//===- Decompositions.cpp - Composite lns ops as simpler ops --------------===//
//
// Every sum below is an lns.sum or the K loop of an lns.linear, both
// sequential: the order of additions is the reference's (xlnstorch's
// softmax, nll_loss and convolutions, as python/lamina/lns computes them).
//
//===----------------------------------------------------------------------===//

#include "lamina/Lns/Transforms/Decompositions.h"

#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::lns;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static Value codeConstant(OpBuilder &b, Location loc, Type element,
                          int64_t code) {
  return ConstantOp::create(b, loc, element, b.getI64IntegerAttr(code));
}

static Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

static Value transpose(OpBuilder &b, Location loc, Value x,
                       ArrayRef<int64_t> permutation) {
  RankedTensorType type = tensorType(x);
  SmallVector<int64_t> shape;
  for (int64_t d : permutation)
    shape.push_back(type.getDimSize(d));
  Value init = emptyLike(b, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(b, loc, x, init, permutation)
      .getResult()[0];
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

Value lns::buildSumKeepDim(OpBuilder &b, Location loc, Value x, int64_t dim) {
  RankedTensorType type = tensorType(x);
  SmallVector<int64_t> reduced(type.getShape());
  reduced.erase(reduced.begin() + dim);
  auto sumType = RankedTensorType::get(reduced, type.getElementType());
  Value sum = SumOp::create(b, loc, sumType, x, b.getDenseI64ArrayAttr({dim}),
                            ReductionOrder::sequential, SbdbMode::ideal);
  Value init = emptyLike(b, loc, type.getShape(), type.getElementType());
  return linalg::BroadcastOp::create(b, loc, sum, init, {dim}).getResult()[0];
}

Value lns::buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim) {
  Value exps = ExpOp::create(b, loc, x);
  return DivOp::create(b, loc, x.getType(), exps,
                       buildSumKeepDim(b, loc, exps, dim));
}

Value lns::buildLogSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim) {
  Value total = buildSumKeepDim(b, loc, ExpOp::create(b, loc, x), dim);
  return SubOp::create(b, loc, x.getType(), x, LogOp::create(b, loc, total),
                       SbdbMode::ideal);
}

//===----------------------------------------------------------------------===//
// Negative log-likelihood
//===----------------------------------------------------------------------===//

/// Whether sample `i`'s target is not `ignoreIndex`, and the target.
static std::pair<Value, Value> keptTarget(OpBuilder &b, Location loc,
                                          Value target, Value i,
                                          int64_t ignoreIndex) {
  Value t = tensor::ExtractOp::create(b, loc, target, ValueRange{i});
  Value ignored = arith::ConstantOp::create(b, loc,
                                            b.getI64IntegerAttr(ignoreIndex));
  return {arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, t, ignored),
          t};
}

/// Whether sample `i`'s target is kept, and its class as an index (0 for
/// an ignored sample).
static std::pair<Value, Value> targetAt(OpBuilder &b, Location loc,
                                        Value target, Value i,
                                        int64_t ignoreIndex) {
  auto [kept, t] = keptTarget(b, loc, target, i, ignoreIndex);
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value safe = arith::SelectOp::create(b, loc, kept, t, zero);
  return {kept, arith::IndexCastOp::create(b, loc, b.getIndexType(), safe)};
}

/// The code of the number of kept samples (a scalar of `element`), as the
/// mean's divisor.
static Value keptCount(OpBuilder &b, Location loc, Value target,
                       int64_t ignoreIndex, Type element) {
  int64_t samples = tensorType(target).getDimSize(0);
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value lower = arith::ConstantIndexOp::create(b, loc, 0);
  Value upper = arith::ConstantIndexOp::create(b, loc, samples);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lower, upper, step, ValueRange{zero},
      [&](OpBuilder &nb, Location nloc, Value i, ValueRange count) {
        Value kept = keptTarget(nb, nloc, target, i, ignoreIndex).first;
        Value one = arith::ExtUIOp::create(nb, nloc, nb.getI64Type(), kept);
        scf::YieldOp::create(
            nb, nloc, ValueRange{arith::AddIOp::create(nb, nloc, count[0], one)});
      });
  Value value =
      arith::SIToFPOp::create(b, loc, b.getF64Type(), loop.getResult(0));
  return EncodeOp::create(b, loc, element, value);
}

static Value scalarTensor(OpBuilder &b, Location loc, Value scalar) {
  return tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, scalar.getType()), scalar);
}

Value lns::buildNllLoss(OpBuilder &b, Location loc, NllLossOp op) {
  RankedTensorType scores = op.getInput().getType();
  Type element = scores.getElementType();
  int64_t ignoreIndex = op.getIgnoreIndex();
  Value input = op.getInput(), target = op.getTarget();
  Value zero = codeConstant(b, loc, element, codes::kZero);
  auto termsType = RankedTensorType::get({scores.getDimSize(0)}, element);
  Value terms = tensor::GenerateOp::create(
      b, loc, termsType, ValueRange{},
      [&](OpBuilder &nb, Location nloc, ValueRange indices) {
        auto [kept, index] =
            targetAt(nb, nloc, target, indices[0], ignoreIndex);
        Value picked = tensor::ExtractOp::create(
            nb, nloc, input, ValueRange{indices[0], index});
        Value term = arith::SelectOp::create(
            nb, nloc, kept, NegOp::create(nb, nloc, picked), zero);
        tensor::YieldOp::create(nb, nloc, term);
      });
  if (op.getReduction() == LossReduction::none)
    return terms;
  auto lossType = RankedTensorType::get({}, element);
  Value sum = SumOp::create(b, loc, lossType, terms, b.getDenseI64ArrayAttr({0}),
                            ReductionOrder::sequential, SbdbMode::ideal);
  if (op.getReduction() == LossReduction::sum)
    return sum;
  Value divisor = keptCount(b, loc, target, ignoreIndex, element);
  return DivOp::create(b, loc, lossType, sum, scalarTensor(b, loc, divisor));
}

Value lns::buildNllLossGrad(OpBuilder &b, Location loc, NllLossGradOp op) {
  RankedTensorType type = op.getResult().getType();
  Type element = type.getElementType();
  int64_t ignoreIndex = op.getIgnoreIndex();
  Value grad = op.getGrad(), target = op.getTarget();
  Value zero = codeConstant(b, loc, element, codes::kZero);
  // cm1, divided by the forward's divisor for a mean.
  Value scale = codeConstant(b, loc, element, 1);
  if (op.getReduction() == LossReduction::mean)
    scale = DivOp::create(b, loc, element, scale,
                          keptCount(b, loc, target, ignoreIndex, element));
  bool perSample = op.getReduction() == LossReduction::none;
  return tensor::GenerateOp::create(
      b, loc, type, ValueRange{},
      [&](OpBuilder &nb, Location nloc, ValueRange indices) {
        auto [kept, index] =
            targetAt(nb, nloc, target, indices[0], ignoreIndex);
        Value hit = arith::AndIOp::create(
            nb, nloc, kept,
            arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq, index,
                                  indices[1]));
        Value g = tensor::ExtractOp::create(
            nb, nloc, grad, perSample ? ValueRange{indices[0]} : ValueRange{});
        Value value = arith::SelectOp::create(
            nb, nloc, hit, MulOp::create(nb, nloc, element, scale, g), zero);
        tensor::YieldOp::create(nb, nloc, value);
      });
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

Conv2DGeometry Conv2DGeometry::of(Conv2DOp op) {
  Conv2DGeometry geometry;
  geometry.strides.assign(op.getStrides().begin(), op.getStrides().end());
  geometry.dilations.assign(op.getDilations().begin(), op.getDilations().end());
  geometry.padLow.assign(op.getPadLow().begin(), op.getPadLow().end());
  geometry.padHigh.assign(op.getPadHigh().begin(), op.getPadHigh().end());
  return geometry;
}

/// One row per output position (n, oh, ow), its terms in the order
/// (c, kh, kw): `source[n, c, start + o·stride + k·step]` in each spatial
/// dimension. [N·OH·OW, C·KH·KW].
static Value buildWindowRows(OpBuilder &b, Location loc, Value source,
                             ArrayRef<int64_t> outSize,
                             ArrayRef<int64_t> kernel, ArrayRef<int64_t> start,
                             ArrayRef<int64_t> stride,
                             ArrayRef<int64_t> step) {
  RankedTensorType type = tensorType(source);
  int64_t n = type.getDimSize(0), c = type.getDimSize(1);
  auto windowsType = RankedTensorType::get(
      {n, outSize[0], outSize[1], c, kernel[0], kernel[1]},
      type.getElementType());
  // A gather of scalars (tensor.generate), not a linalg op: its strided
  // reads are no contraction for the vectorizing schedules.
  Value windows = tensor::GenerateOp::create(
      b, loc, windowsType, ValueRange{},
      [&](OpBuilder &nb, Location nloc, ValueRange at) {
        auto constant = [&](int64_t v) {
          return arith::ConstantIndexOp::create(nb, nloc, v);
        };
        SmallVector<Value> reads = {at[0], at[3]};
        for (int s = 0; s < 2; ++s) {
          Value position = arith::AddIOp::create(
              nb, nloc,
              arith::MulIOp::create(nb, nloc, at[1 + s], constant(stride[s])),
              arith::MulIOp::create(nb, nloc, at[4 + s], constant(step[s])));
          reads.push_back(
              arith::AddIOp::create(nb, nloc, position, constant(start[s])));
        }
        tensor::YieldOp::create(
            nb, nloc, tensor::ExtractOp::create(nb, nloc, source, reads));
      });
  SmallVector<ReassociationIndices> rows = {{0, 1, 2}, {3, 4, 5}};
  return tensor::CollapseShapeOp::create(b, loc, windows, rows);
}

/// `x` padded with Z by `low` / `high` in its two spatial dimensions.
static Value padSpatial(OpBuilder &b, Location loc, Value x,
                        ArrayRef<int64_t> low, ArrayRef<int64_t> high) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return x;
  RankedTensorType type = tensorType(x);
  SmallVector<int64_t> lows = {0, 0, low[0], low[1]};
  SmallVector<int64_t> highs = {0, 0, high[0], high[1]};
  SmallVector<int64_t> shape(type.getShape());
  for (int s = 0; s < 2; ++s)
    shape[2 + s] += low[s] + high[s];
  Value zero = codeConstant(b, loc, type.getElementType(), codes::kZero);
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x,
      getAsIndexOpFoldResult(b.getContext(), lows),
      getAsIndexOpFoldResult(b.getContext(), highs), zero);
}

static SmallVector<int64_t, 2> spatial(RankedTensorType type) {
  return {type.getDimSize(2), type.getDimSize(3)};
}

/// The forward's window rows of the (padded) input.
static Value inputRows(OpBuilder &b, Location loc, Value input,
                       ArrayRef<int64_t> kernel, ArrayRef<int64_t> outSize,
                       const Conv2DGeometry &geometry) {
  Value padded = padSpatial(b, loc, input, geometry.padLow, geometry.padHigh);
  return buildWindowRows(b, loc, padded, outSize, kernel, {0, 0},
                         geometry.strides, geometry.dilations);
}

/// [rows, F] from lns.linear back to [N, F, OH, OW].
static Value channelsFirst(OpBuilder &b, Location loc, Value rows, int64_t n,
                           ArrayRef<int64_t> positions) {
  RankedTensorType type = tensorType(rows);
  auto expanded = RankedTensorType::get(
      {n, positions[0], positions[1], type.getDimSize(1)},
      type.getElementType());
  SmallVector<ReassociationIndices> groups = {{0, 1, 2}, {3}};
  Value nhwc =
      tensor::ExpandShapeOp::create(b, loc, expanded, rows, groups);
  return transpose(b, loc, nhwc, {0, 3, 1, 2});
}

/// w [F, C, KH, KW] as [F, C·KH·KW].
static Value flattenFilters(OpBuilder &b, Location loc, Value weight) {
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2, 3}};
  return tensor::CollapseShapeOp::create(b, loc, weight, groups);
}

Value lns::buildConv2D(OpBuilder &b, Location loc, Value input, Value weight,
                       Value bias, RankedTensorType resultType,
                       const Conv2DGeometry &geometry) {
  RankedTensorType inputType = tensorType(input);
  RankedTensorType weightType = tensorType(weight);
  SmallVector<int64_t, 2> kernel = spatial(weightType);
  SmallVector<int64_t, 2> outSize = spatial(resultType);
  Value rows = inputRows(b, loc, input, kernel, outSize, geometry);
  int64_t n = inputType.getDimSize(0), filters = weightType.getDimSize(0);
  auto rowsType = RankedTensorType::get(
      {n * outSize[0] * outSize[1], filters}, inputType.getElementType());
  Value out = LinearOp::create(b, loc, rowsType, rows,
                               flattenFilters(b, loc, weight), bias,
                               SbdbMode::ideal);
  return channelsFirst(b, loc, out, n, outSize);
}

Value lns::buildConv2DInputGrad(OpBuilder &b, Location loc, Value grad,
                                Value weight, RankedTensorType inputType,
                                const Conv2DGeometry &geometry) {
  RankedTensorType gradType = tensorType(grad);
  RankedTensorType weightType = tensorType(weight);
  Type element = inputType.getElementType();
  SmallVector<int64_t, 2> kernel = spatial(weightType);
  int64_t n = inputType.getDimSize(0), channels = inputType.getDimSize(1);
  int64_t filters = weightType.getDimSize(0);
  // The gradient spread out by the strides and surrounded by Z, so that
  // padded input position p reads output o at p − k·dilation = o·stride:
  // index reach + d·(K − 1) of `spread`.
  SmallVector<int64_t, 2> reach, padded;
  SmallVector<int64_t> spreadShape = {n, filters};
  for (int s = 0; s < 2; ++s) {
    reach.push_back(geometry.dilations[s] * (kernel[s] - 1));
    padded.push_back(inputType.getDimSize(2 + s) + geometry.padLow[s] +
                     geometry.padHigh[s]);
    spreadShape.push_back(reach[s] + padded[s]);
  }
  Value zero = codeConstant(b, loc, element, codes::kZero);
  Value spread =
      linalg::FillOp::create(b, loc, zero,
                             emptyLike(b, loc, spreadShape, element))
          .getResult(0);
  SmallVector<int64_t> offsets = {0, 0, reach[0], reach[1]};
  SmallVector<int64_t> strides = {1, 1, geometry.strides[0],
                                  geometry.strides[1]};
  spread = tensor::InsertSliceOp::create(
      b, loc, grad, spread, getAsIndexOpFoldResult(b.getContext(), offsets),
      getAsIndexOpFoldResult(b.getContext(), gradType.getShape()),
      getAsIndexOpFoldResult(b.getContext(), strides));
  Value rows = buildWindowRows(
      b, loc, spread, padded, kernel, reach, {1, 1},
      {-geometry.dilations[0], -geometry.dilations[1]});
  // w as [C, F·KH·KW]: each input channel's terms over (f, kh, kw).
  Value perChannel =
      flattenFilters(b, loc, transpose(b, loc, weight, {1, 0, 2, 3}));
  auto rowsType = RankedTensorType::get({n * padded[0] * padded[1], channels},
                                        element);
  Value gradRows = LinearOp::create(b, loc, rowsType, rows, perChannel,
                                    Value(), SbdbMode::ideal);
  Value full = channelsFirst(b, loc, gradRows, n, padded);
  SmallVector<int64_t> cropOffsets = {0, 0, geometry.padLow[0],
                                      geometry.padLow[1]};
  SmallVector<int64_t> ones(4, 1);
  return tensor::ExtractSliceOp::create(
      b, loc, inputType, full,
      getAsIndexOpFoldResult(b.getContext(), cropOffsets),
      getAsIndexOpFoldResult(b.getContext(), inputType.getShape()),
      getAsIndexOpFoldResult(b.getContext(), ones));
}

Value lns::buildConv2DWeightGrad(OpBuilder &b, Location loc, Value grad,
                                 Value input, RankedTensorType weightType,
                                 const Conv2DGeometry &geometry) {
  RankedTensorType gradType = tensorType(grad);
  Value rows = inputRows(b, loc, input, spatial(weightType), spatial(gradType),
                         geometry);
  // g as [F, N·OH·OW] against the rows' columns: sums over (n, oh, ow).
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2, 3}};
  Value perFilter = tensor::CollapseShapeOp::create(
      b, loc, transpose(b, loc, grad, {1, 0, 2, 3}), groups);
  RankedTensorType rowsType = tensorType(rows);
  auto flatType = RankedTensorType::get(
      {weightType.getDimSize(0), rowsType.getDimSize(1)},
      weightType.getElementType());
  Value flat = LinearOp::create(b, loc, flatType, perFilter,
                                transpose(b, loc, rows, {1, 0}), Value(),
                                SbdbMode::ideal);
  return tensor::ExpandShapeOp::create(b, loc, weightType, flat, groups);
}
