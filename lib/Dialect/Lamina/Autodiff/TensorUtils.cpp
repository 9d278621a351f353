//===- TensorUtils.cpp - Tensor pieces the reverse-mode rules share -------===//

#include "TensorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace mlir::lamina;

Value autodiff::buildZeros(OpBuilder &b, Location loc,
                           ArrayRef<OpFoldResult> sizes, Type elt) {
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
  Value init = tensor::EmptyOp::create(b, loc, sizes, elt);
  return linalg::FillOp::create(b, loc, zero, init).getResult(0);
}

Value autodiff::buildZerosLike(OpBuilder &b, Location loc, Value like) {
  return buildZeros(b, loc, tensor::getMixedSizes(b, loc, like),
                    cast<RankedTensorType>(like.getType()).getElementType());
}

Value autodiff::buildTranspose(OpBuilder &b, Location loc, Value value,
                               ArrayRef<int64_t> permutation) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  SmallVector<OpFoldResult> permuted;
  for (int64_t source : permutation)
    permuted.push_back(sizes[source]);
  Value init = tensor::EmptyOp::create(
      b, loc, permuted,
      cast<RankedTensorType>(value.getType()).getElementType());
  return linalg::TransposeOp::create(b, loc, value, init, permutation)
      .getResult()[0];
}

Value autodiff::buildTranspose2D(OpBuilder &b, Location loc, Value matrix) {
  return buildTranspose(b, loc, matrix, {1, 0});
}

Value autodiff::buildFlattenRows(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() <= 2)
    return value;
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    rows.push_back(d);
  return tensor::CollapseShapeOp::create(
      b, loc, value,
      ArrayRef<ReassociationIndices>{rows, {type.getRank() - 1}});
}

Value autodiff::buildSumLeadingDims(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Type elt = type.getElementType();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    dims.push_back(d);
  if (dims.empty())
    return value;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  // bf16/f16 sums accumulate in f32 (as PyTorch's do): rounding each
  // partial sum to 8 bits lost percents over a few hundred rows.
  Type accElt = elt.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : elt;
  Value acc = buildZeros(b, loc, ArrayRef(sizes).take_back(), accElt);
  Value sum = linalg::ReduceOp::create(
                  b, loc, ValueRange{value}, ValueRange{acc}, dims,
                  [&](OpBuilder &nb, Location nloc, ValueRange args) {
                    Value in = args[0];
                    if (in.getType() != accElt)
                      in = arith::ExtFOp::create(nb, nloc, accElt, in);
                    Value next = arith::AddFOp::create(nb, nloc, in, args[1]);
                    linalg::YieldOp::create(nb, nloc, next);
                  })
                  .getResult(0);
  if (accElt == elt)
    return sum;
  return arith::TruncFOp::create(
      b, loc, cast<RankedTensorType>(sum.getType()).clone(elt), sum);
}
