//===- KernelSupport.cpp - Launches, index math, shared memory ------------===//

#include "GpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::lamina;

gpu::LaunchOp mlir::lamina::createKernelLaunch(OpBuilder &b, Location loc,
                                               Value gridX, Value gridY,
                                               int64_t threads,
                                               int64_t sharedBytes) {
  IndexMath ix(b, loc);
  Value shared = sharedBytes
                     ? arith::ConstantOp::create(
                           b, loc, b.getI32IntegerAttr(int32_t(sharedBytes)))
                     : Value();
  auto launch = gpu::LaunchOp::create(b, loc, gridX, gridY, ix(1), ix(threads),
                                      ix(1), ix(1), shared);
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);
  return launch;
}

/// Output tiles in groups of this many row blocks: CTAs running at the same
/// time share a few row blocks of x and sweep W together, so both stay in
/// L2.
static constexpr int64_t kTileGroupRows = 8;

std::pair<Value, Value>
mlir::lamina::buildGroupedTileOrder(OpBuilder &b, Location loc, Value pid,
                                    Value tilesM, int64_t tilesN) {
  IndexMath ix(b, loc);
  int64_t groupSize = kTileGroupRows * tilesN;
  Value firstRow = ix.mul(ix.div(pid, groupSize), kTileGroupRows);
  Value rowsInGroup = arith::MinUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, tilesM, firstRow),
      ix(kTileGroupRows));
  Value inGroup = ix.rem(pid, groupSize);
  Value tileM =
      ix.add(firstRow, arith::RemUIOp::create(b, loc, inGroup, rowsInGroup));
  Value tileN = arith::DivUIOp::create(b, loc, inGroup, rowsInGroup);
  return {tileM, tileN};
}

Value GpuLinear::rowTiles(OpBuilder &b, Location loc, int64_t blockRows) const {
  IndexMath ix(b, loc);
  if (hasStaticRows())
    return ix(llvm::divideCeil(m, blockRows));
  return ix.ceilDiv(rows, blockRows);
}

Value IndexMath::operator()(int64_t value) const {
  return arith::ConstantIndexOp::create(b, loc, value);
}
// Constant operands fold here, so that shapes known when compiling give
// constant grids and tile counts rather than host arithmetic.
Value IndexMath::add(Value lhs, Value rhs) const {
  std::optional<int64_t> l = getConstantIntValue(lhs);
  std::optional<int64_t> r = getConstantIntValue(rhs);
  if (l && r)
    return (*this)(*l + *r);
  return arith::AddIOp::create(b, loc, lhs, rhs);
}
Value IndexMath::mul(Value lhs, int64_t rhs) const {
  if (std::optional<int64_t> l = getConstantIntValue(lhs))
    return (*this)(*l * rhs);
  return arith::MulIOp::create(b, loc, lhs, (*this)(rhs));
}
Value IndexMath::div(Value lhs, int64_t rhs) const {
  if (std::optional<int64_t> l = getConstantIntValue(lhs))
    return (*this)(*l / rhs);
  return arith::DivUIOp::create(b, loc, lhs, (*this)(rhs));
}
Value IndexMath::rem(Value lhs, int64_t rhs) const {
  return arith::RemUIOp::create(b, loc, lhs, (*this)(rhs));
}
Value IndexMath::lessThan(Value lhs, int64_t rhs) const {
  return lessThan(lhs, (*this)(rhs));
}
Value IndexMath::lessThan(Value lhs, Value rhs) const {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lhs, rhs);
}
Value IndexMath::ceilDiv(Value lhs, int64_t rhs) const {
  return div(add(lhs, (*this)(rhs - 1)), rhs);
}

Value mlir::lamina::extendToF32(OpBuilder &b, Location loc, Value value) {
  Type f32 = b.getF32Type();
  return value.getType() == f32 ? value
                                : arith::ExtFOp::create(b, loc, f32, value);
}

static constexpr StringLiteral kSharedMemorySymbol = "lamina_dyn_smem";

/// NVVM's shared address space, numeric: with #gpu.address_space the host
/// copy of the global cannot be converted.
static constexpr int64_t kSharedSpace = 3;

Value mlir::lamina::buildDynamicSharedMemory(OpBuilder &b, Location loc,
                                             Operation *anchor, int64_t bytes) {
  Type i8 = b.getI8Type();
  Attribute space = b.getI64IntegerAttr(kSharedSpace);
  auto declaredType =
      MemRefType::get({0}, i8, MemRefLayoutAttrInterface(), space);
  auto module = anchor->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol(kSharedMemorySymbol)) {
    OpBuilder moduleBuilder(module.getBodyRegion());
    memref::GlobalOp::create(
        moduleBuilder, module.getLoc(), kSharedMemorySymbol,
        moduleBuilder.getStringAttr("public"), declaredType,
        /*initial_value=*/Attribute(),
        /*constant=*/false, moduleBuilder.getI64IntegerAttr(1024));
  }
  Value declared =
      memref::GetGlobalOp::create(b, loc, declaredType, kSharedMemorySymbol);
  return memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get({bytes}, i8, MemRefLayoutAttrInterface(), space),
      declared, /*offset=*/0, /*sizes=*/ArrayRef<int64_t>{bytes},
      /*strides=*/ArrayRef<int64_t>{1});
}
