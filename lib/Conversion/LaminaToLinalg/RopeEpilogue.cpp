//===- RopeEpilogue.cpp - A rotary embedding as a matmul's epilogue -------===//
//
// A linear layer's packed accumulator [M, N/B, B] (blocks of B output
// features), rotated in interleaved pairs as lamina.rope rotates the result
// viewed as [..., heads, head_dim]. Each element needs its pair partner, one
// lane over, which no element-wise map reads: the partners come from a
// contraction with the constant B × B exchange matrix (partner[n] =
// Σ_j acc[j]·P[n, j], P[n, n ^ 1] = 1), a generic whose maps are projected
// permutations like the epilogue's own. Fused into the matmul's register
// tile, both read the accumulator where it is held; the tables are read by
// index (the row's position, the feature's pair).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::lamina;

/// partner[m, n1, n0] = Σ_j acc[m, n1, j] · P[n0, j], with P exchanging
/// the lanes of each pair.
static Value buildPartners(OpBuilder &b, Location loc, Value acc) {
  auto type = cast<RankedTensorType>(acc.getType());
  int64_t block = type.getShape().back();
  Type element = type.getElementType();
  auto exchangeType = RankedTensorType::get({block, block}, element);
  SmallVector<Attribute> entries;
  for (int64_t lane = 0; lane < block; ++lane)
    for (int64_t j = 0; j < block; ++j)
      entries.push_back(b.getFloatAttr(element, j == (lane ^ 1) ? 1.0 : 0.0));
  Value exchange = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(exchangeType, entries));

  Value init = buildZeroAccumulator(
      b, loc, getAsIndexOpFoldResult(b.getContext(), type.getShape()),
      element);
  MLIRContext *context = b.getContext();
  AffineExpr m, n1, n0, j;
  bindDims(context, m, n1, n0, j);
  auto maps = AffineMap::inferFromExprList(
      {ArrayRef<AffineExpr>{m, n1, j}, {n0, j}, {m, n1, n0}}, context);
  auto partners = linalg::GenericOp::create(
      b, loc, type, ValueRange{acc, exchange}, init, maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
        linalg::YieldOp::create(
            nb, nloc,
            arith::AddFOp::create(nb, nloc, args[2], product).getResult());
      });
  setLoweredStage(partners, LoweredStage::pair_partners);
  return partners.getResult(0);
}

/// `value` as f32 (the epilogue computes in f32).
static Value widen(OpBuilder &b, Location loc, Value value) {
  if (value.getType().isF32())
    return value;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
}

Value mlir::lamina::buildRopeEpilogue(OpBuilder &b, Location loc, Value acc,
                                      Value cos, Value sin,
                                      RankedTensorType resultType,
                                      Type resultElt) {
  auto accType = cast<RankedTensorType>(acc.getType());
  int64_t block = accType.getShape().back();
  ArrayRef<int64_t> tables = cast<RankedTensorType>(cos.getType()).getShape();
  int64_t headDim = 2 * tables.back();
  // The result's leading dims, flattened into the accumulator's rows.
  ArrayRef<int64_t> rowDims = resultType.getShape().drop_back();
  Value partners = buildPartners(b, loc, acc);

  MLIRContext *context = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(3, context);
  Value init = tensor::EmptyOp::create(b, loc, accType.getShape(), resultElt);
  auto epilogue = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{acc, partners}, init,
      {identity, identity, identity},
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto constant = [&](int64_t value) {
          return arith::ConstantIndexOp::create(nb, nloc, value).getResult();
        };
        Value feature = arith::AddIOp::create(
            nb, nloc,
            arith::MulIOp::create(nb, nloc,
                                  linalg::IndexOp::create(nb, nloc, 1),
                                  constant(block)),
            linalg::IndexOp::create(nb, nloc, 2));
        Value inHead = arith::RemUIOp::create(nb, nloc, feature,
                                              constant(headDim));
        Value pair = arith::DivUIOp::create(nb, nloc, inHead, constant(2));
        Value second = arith::CmpIOp::create(
            nb, nloc, arith::CmpIPredicate::ne,
            arith::RemUIOp::create(nb, nloc, inHead, constant(2)),
            constant(0));
        // The row's index on each leading dim, last dim fastest; a table
        // dim of 1 broadcasts.
        SmallVector<Value> indices(tables.size());
        Value row = linalg::IndexOp::create(nb, nloc, 0);
        for (int64_t dim = rowDims.size() - 1; dim >= 0; --dim) {
          Value size = constant(rowDims[dim]);
          indices[dim] = tables[dim] == 1
                             ? constant(0)
                             : arith::RemUIOp::create(nb, nloc, row, size)
                                   .getResult();
          if (dim > 0)
            row = arith::DivUIOp::create(nb, nloc, row, size);
        }
        indices[rowDims.size()] =
            tables[rowDims.size()] == 1
                ? constant(0)
                : arith::DivUIOp::create(nb, nloc, feature, constant(headDim))
                      .getResult();
        indices.back() = pair;
        Value c =
            widen(nb, nloc, tensor::ExtractOp::create(nb, nloc, cos, indices));
        Value s =
            widen(nb, nloc, tensor::ExtractOp::create(nb, nloc, sin, indices));
        // (a, b) → (a·cos − b·sin, b·cos + a·sin): the partner's term is
        // subtracted on a pair's first element.
        Value signedSin =
            arith::SelectOp::create(nb, nloc, second, s,
                                    arith::NegFOp::create(nb, nloc, s));
        Value value = arith::AddFOp::create(
            nb, nloc,
            arith::MulFOp::create(nb, nloc, widen(nb, nloc, args[0]), c),
            arith::MulFOp::create(nb, nloc, widen(nb, nloc, args[1]),
                                  signedSin));
        if (resultElt != value.getType())
          value = arith::TruncFOp::create(nb, nloc, resultElt, value);
        linalg::YieldOp::create(nb, nloc, value);
      });
  setLoweredStage(epilogue, LoweredStage::epilogue);
  return epilogue.getResult(0);
}
