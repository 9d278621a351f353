//===- DataKernels.cpp - Transposes, column sums, element-wise maps -------===//
//
// The memory-bound kernels around a training step's matmuls: the operand
// transposes of dX = dY·W and dW = dYᵀ·X, the bias gradient Σ_rows dY, and
// activations or their derivatives that no matmul epilogue absorbed.
//
//===----------------------------------------------------------------------===//

#include "GpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::lamina;

/// Size of `buffer`'s dim `d` as an index value (a constant when static).
static Value dimSize(OpBuilder &b, Location loc, Value buffer, int64_t d) {
  return getValueOrCreateConstantIndexOp(
      b, loc, memref::getMixedSize(b, loc, buffer, d));
}

static Value fromF32(OpBuilder &b, Location loc, Value value, Type type) {
  return type == value.getType()
             ? value
             : arith::TruncFOp::create(b, loc, type, value).getResult();
}

/// `then` under `if (condition)`, at the builder's insertion point.
static void ifThen(OpBuilder &b, Location loc, Value condition,
                   function_ref<void()> then) {
  OpBuilder::InsertionGuard guard(b);
  auto branch = scf::IfOp::create(b, loc, condition, false);
  b.setInsertionPointToStart(branch.thenBlock());
  then();
}

static constexpr int64_t kTransposeTile = 32;
static constexpr int64_t kTransposeRowsPerPass = 8; // 256 threads

void mlir::lamina::emitTranspose(OpBuilder &b, Location loc, Operation *anchor,
                                 Value source, Value target) {
  OpBuilder::InsertionGuard guard(b);
  IndexMath ix(b, loc);
  Type elt = cast<MemRefType>(source.getType()).getElementType();
  Value rows = dimSize(b, loc, source, 0), cols = dimSize(b, loc, source, 1);
  // Rows padded to an odd number of 4-byte words: the 32 elements of a tile
  // column fall in distinct banks.
  int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
  int64_t pitch = kTransposeTile + std::max<int64_t>(1, 4 / eltBytes);
  int64_t bytes = kTransposeTile * pitch * eltBytes;
  auto launch = createKernelLaunch(
      b, loc, ix.ceilDiv(cols, kTransposeTile),
      ix.ceilDiv(rows, kTransposeTile),
      kTransposeTile * kTransposeRowsPerPass, bytes);
  auto tileType = MemRefType::get({kTransposeTile, pitch}, elt,
                                  MemRefLayoutAttrInterface(),
                                  b.getI64IntegerAttr(3));
  Value tile = memref::ViewOp::create(
      b, loc, tileType, buildDynamicSharedMemory(b, loc, anchor, bytes), ix(0),
      ValueRange());
  Value tid = launch.getThreadIds().x;
  Value lane = ix.rem(tid, kTransposeTile);
  Value pass = ix.div(tid, kTransposeTile);
  Value col0 = ix.mul(launch.getBlockIds().x, kTransposeTile);
  Value row0 = ix.mul(launch.getBlockIds().y, kTransposeTile);
  auto inside = [&](Value row, Value col) {
    return arith::AndIOp::create(b, loc, ix.lessThan(row, rows),
                                 ix.lessThan(col, cols));
  };
  // A warp reads 32 consecutive columns of a source row ...
  for (int64_t p = 0; p < kTransposeTile; p += kTransposeRowsPerPass) {
    Value r = ix.add(pass, ix(p));
    Value row = ix.add(row0, r), col = ix.add(col0, lane);
    ifThen(b, loc, inside(row, col), [&] {
      Value value = memref::LoadOp::create(b, loc, source, ValueRange{row, col});
      memref::StoreOp::create(b, loc, value, tile, ValueRange{r, lane});
    });
  }
  gpu::BarrierOp::create(b, loc);
  // ... and writes 32 consecutive columns of a target row.
  for (int64_t p = 0; p < kTransposeTile; p += kTransposeRowsPerPass) {
    Value c = ix.add(pass, ix(p));
    Value row = ix.add(row0, lane), col = ix.add(col0, c);
    ifThen(b, loc, inside(row, col), [&] {
      Value value = memref::LoadOp::create(b, loc, tile, ValueRange{lane, c});
      memref::StoreOp::create(b, loc, value, target, ValueRange{col, row});
    });
  }
}

static constexpr int64_t kSumColumns = 32;
static constexpr int64_t kSumRowLanes = 8; // 256 threads

void mlir::lamina::emitColumnSum(OpBuilder &b, Location loc, Operation *anchor,
                                 Value source, Value target) {
  OpBuilder::InsertionGuard guard(b);
  IndexMath ix(b, loc);
  Type elt = cast<MemRefType>(target.getType()).getElementType();
  Type f32 = b.getF32Type();
  Value rows = dimSize(b, loc, source, 0), cols = dimSize(b, loc, source, 1);
  int64_t bytes = kSumColumns * kSumRowLanes * 4;
  auto launch =
      createKernelLaunch(b, loc, ix.ceilDiv(cols, kSumColumns), ix(1),
                         kSumColumns * kSumRowLanes, bytes);
  auto partialType =
      MemRefType::get({kSumRowLanes, kSumColumns}, f32,
                      MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
  Value partials = memref::ViewOp::create(
      b, loc, partialType, buildDynamicSharedMemory(b, loc, anchor, bytes),
      ix(0), ValueRange());
  Value tid = launch.getThreadIds().x;
  Value lane = ix.rem(tid, kSumColumns);
  Value rowLane = ix.div(tid, kSumColumns);
  Value col = ix.add(ix.mul(launch.getBlockIds().x, kSumColumns), lane);
  Value colInside = ix.lessThan(col, cols);
  // Rows rowLane, rowLane + 8, ... of one column (a warp reads 32
  // consecutive columns of a row), then the 8 partial sums in shared memory.
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  auto rowLoop = scf::ForOp::create(b, loc, rowLane, rows, ix(kSumRowLanes),
                                    ValueRange{zero});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(rowLoop.getBody());
    Value row = rowLoop.getInductionVar();
    Value safeCol = arith::SelectOp::create(b, loc, colInside, col, ix(0));
    Value value = extendToF32(
        b, loc,
        memref::LoadOp::create(b, loc, source, ValueRange{row, safeCol}));
    value = arith::SelectOp::create(b, loc, colInside, value, zero);
    scf::YieldOp::create(
        b, loc,
        ValueRange{arith::AddFOp::create(b, loc, rowLoop.getRegionIterArg(0),
                                         value)});
  }
  memref::StoreOp::create(b, loc, rowLoop.getResult(0), partials,
                          ValueRange{rowLane, lane});
  gpu::BarrierOp::create(b, loc);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      rowLane, ix(0));
  ifThen(b, loc, arith::AndIOp::create(b, loc, first, colInside), [&] {
    Value sum = zero;
    for (int64_t r = 0; r < kSumRowLanes; ++r)
      sum = arith::AddFOp::create(
          b, loc, sum,
          memref::LoadOp::create(b, loc, partials, ValueRange{ix(r), lane}));
    memref::StoreOp::create(b, loc, fromF32(b, loc, sum, elt), target, col);
  });
}

/// `buffer` as one dimension.
static Value flattenAll(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return buffer;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(
      b, loc, buffer, ArrayRef<ReassociationIndices>{all});
}

static constexpr int64_t kElementwiseThreads = 256;

void mlir::lamina::emitElementwise(
    OpBuilder &b, Location loc, ValueRange sources, Value target,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  OpBuilder::InsertionGuard guard(b);
  IndexMath ix(b, loc);
  Type elt = cast<MemRefType>(target.getType()).getElementType();
  SmallVector<Value> flatSources;
  for (Value source : sources)
    flatSources.push_back(flattenAll(b, loc, source));
  Value flatTarget = flattenAll(b, loc, target);
  Value size = dimSize(b, loc, flatTarget, 0);
  auto launch =
      createKernelLaunch(b, loc, ix.ceilDiv(size, kElementwiseThreads), ix(1),
                         kElementwiseThreads);
  Value index =
      ix.add(ix.mul(launch.getBlockIds().x, kElementwiseThreads),
             launch.getThreadIds().x);
  ifThen(b, loc, ix.lessThan(index, size), [&] {
    SmallVector<Value> args;
    for (Value source : flatSources)
      args.push_back(
          extendToF32(b, loc, memref::LoadOp::create(b, loc, source, index)));
    Value result = fromF32(b, loc, body(b, loc, args), elt);
    memref::StoreOp::create(b, loc, result, flatTarget, index);
  });
}
