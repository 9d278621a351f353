//===- DropoutMask.cpp - Dropout masks drawn before the epilogue ----------===//

#include "DropoutMask.h"

#include "lamina/Conversion/LaminaToLinalg/EpilogueMath.h"
#include "lamina/Conversion/LaminaToLinalg/Philox.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::lamina;

/// Elements of the dropped value per step of the dims before its shard
/// axis: a run that is contiguous in the whole tensor too.
static int64_t shardRunLength(const DropoutDraw &draw) {
  ArrayRef<int64_t> shape = draw.valueType.getShape();
  int64_t run = 1;
  for (int64_t size : shape.drop_front(*draw.dropout.getShardAxis()))
    run *= size;
  return run;
}

// Sharded on an axis, local runs of `run` elements are whole-tensor runs
// `shards` times as far apart, starting at this rank's block.
Value mlir::lamina::buildWholeTensorIndex(OpBuilder &b, Location loc,
                                          Value local, const DropoutDraw &draw,
                                          int64_t unit) {
  if (!draw.dropout.getShardAxis())
    return local;
  int64_t run = shardRunLength(draw) / unit;
  int64_t gap = (draw.dropout.getShards() - 1) * run;
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value));
  };
  Value rank = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), draw.rank);
  Value runs = arith::DivUIOp::create(b, loc, local, constant(run));
  Value index = arith::AddIOp::create(
      b, loc, local, arith::MulIOp::create(b, loc, runs, constant(gap)));
  return arith::AddIOp::create(
      b, loc, index, arith::MulIOp::create(b, loc, rank, constant(run)));
}

/// The dropout mask of `rows` rows of `rowLength` elements (a multiple of
/// 4) as i8 [rows, rowLength], one Philox call per four consecutive
/// elements: a generic over (m, g), g < rowLength/4, yields the four
/// decisions of group m·rowLength/4 + g (elements 4g .. 4g+3 of row m),
/// interleaved by an element-wise generic over [rows, rowLength/4, 4].
static Value buildGroupedKeepMask(OpBuilder &b, Location loc, OpFoldResult rows,
                                  int64_t rowLength, const DropoutDraw &draw) {
  int64_t n = rowLength;
  Type i8 = b.getI8Type();
  SmallVector<OpFoldResult> groupShape = {rows, b.getIndexAttr(n / 4)};
  SmallVector<Value> inits;
  for (int w = 0; w < 4; ++w)
    inits.push_back(tensor::EmptyOp::create(b, loc, groupShape, i8));
  SmallVector<AffineMap> maps(4, b.getMultiDimIdentityMap(2));
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  auto words = linalg::GenericOp::create(
      b, loc, TypeRange(ValueRange(inits)), ValueRange{}, inits, maps, parallel,
      [&](OpBuilder &nb, Location nloc, ValueRange) {
        Value group = arith::AddIOp::create(
            nb, nloc,
            arith::MulIOp::create(
                nb, nloc, linalg::IndexOp::create(nb, nloc, 0),
                arith::ConstantIndexOp::create(nb, nloc, n / 4)),
            linalg::IndexOp::create(nb, nloc, 1));
        Value group64 = buildWholeTensorIndex(
            nb, nloc,
            arith::IndexCastUIOp::create(nb, nloc, nb.getI64Type(), group),
            draw, /*unit=*/4);
        std::array<Value, 4> keep = buildDropoutKeepGroup(
            nb, nloc, group64, draw.seed, draw.dropout.getOffset(), draw.offsetBase,
            buildDropoutStream(nb, nloc, draw.dropout, draw.rank),
            draw.dropout.getProbability());
        SmallVector<Value> bytes;
        for (Value bit : keep)
          bytes.push_back(arith::ExtUIOp::create(nb, nloc, i8, bit));
        linalg::YieldOp::create(nb, nloc, bytes);
      });
  // Interleave: word w of group g is element 4g + w of the row, an
  // element-wise op over [rows, n/4, 4] (vectorized like any other, where
  // strided inserts of each word became byte-by-byte copy loops).
  MLIRContext *context = b.getContext();
  AffineExpr m, g, w;
  bindDims(context, m, g, w);
  SmallVector<AffineMap> interleaveMaps(4,
                                        AffineMap::get(3, 0, {m, g}, context));
  interleaveMaps.push_back(b.getMultiDimIdentityMap(3));
  Value interleavedInit = tensor::EmptyOp::create(
      b, loc,
      SmallVector<OpFoldResult>{rows, b.getIndexAttr(n / 4), b.getIndexAttr(4)},
      i8);
  Value interleaved =
      linalg::GenericOp::create(
          b, loc, interleavedInit.getType(), words.getResults(),
          ValueRange{interleavedInit}, interleaveMaps,
          SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value word = linalg::IndexOp::create(nb, nloc, 2);
            Value chosen = args[3];
            for (int i = 2; i >= 0; --i) {
              Value isWord = arith::CmpIOp::create(
                  nb, nloc, arith::CmpIPredicate::eq, word,
                  arith::ConstantIndexOp::create(nb, nloc, i));
              chosen =
                  arith::SelectOp::create(nb, nloc, isWord, args[i], chosen);
            }
            linalg::YieldOp::create(nb, nloc, chosen);
          })
          .getResult(0);
  return tensor::CollapseShapeOp::create(
      b, loc, interleaved, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
}

bool mlir::lamina::hasGroupedKeepMask(Value value, const DropoutDraw &draw) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t last = type.getRank() ? type.getShape().back() : ShapedType::kDynamic;
  return draw.dropout && draw.dropout.isActive() &&
         !ShapedType::isDynamic(last) && last > 0 && last % 4 == 0 &&
         (!draw.dropout.getShardAxis() || shardRunLength(draw) % 4 == 0);
}

Value mlir::lamina::buildKeepMaskLike(OpBuilder &b, Location loc, Value value,
                                      const DropoutDraw &draw) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  int64_t rowLength = type.getShape().back();
  if (rank == 1) {
    Value mask =
        buildGroupedKeepMask(b, loc, b.getIndexAttr(1), rowLength, draw);
    return tensor::CollapseShapeOp::create(
        b, loc, mask, ArrayRef<ReassociationIndices>{{0, 1}});
  }
  if (rank == 2)
    return buildGroupedKeepMask(b, loc, tensor::getMixedSize(b, loc, value, 0),
                                rowLength, draw);
  ReassociationIndices outer;
  for (int64_t d = 0; d + 1 < rank; ++d)
    outer.push_back(d);
  SmallVector<ReassociationIndices> groups = {outer, {rank - 1}};
  Value rows = tensor::CollapseShapeOp::create(b, loc, value, groups);
  Value mask = buildGroupedKeepMask(
      b, loc, tensor::getMixedSize(b, loc, rows, 0), rowLength, draw);
  return tensor::ExpandShapeOp::create(b, loc, type.clone(b.getI8Type()), mask,
                                       groups,
                                       tensor::getMixedSizes(b, loc, value));
}

Value mlir::lamina::buildBlockedKeepMask(OpBuilder &b, Location loc, Value acc,
                                         const DropoutDraw &draw) {
  auto accType = cast<RankedTensorType>(acc.getType());
  int64_t n = accType.getDimSize(1) * accType.getDimSize(2);
  Value mask = buildGroupedKeepMask(
      b, loc, tensor::getMixedSize(b, loc, acc, 0), n, draw);
  SmallVector<OpFoldResult> viewShape = tensor::getMixedSizes(b, loc, acc);
  return tensor::ExpandShapeOp::create(
      b, loc, accType.clone(b.getI8Type()), mask,
      ArrayRef<ReassociationIndices>{{0}, {1, 2}}, viewShape);
}
