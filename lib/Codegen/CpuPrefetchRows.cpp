//===- CpuPrefetchRows.cpp - Prefetch the rows a loop streams -------------===//

#include "lamina/Codegen/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACPUPREFETCHROWS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// A cache line, the unit the prefetches are counted in.
static constexpr int64_t kLineBytes = 64;

/// Whether `index` is `iv`, or `iv` plus a constant c >= 0 or plus a value
/// defined outside `loop` (the start of a chunk of rows), or such a sum
/// plus a constant c >= 0.
static bool isInductionRow(Value index, scf::ForOp loop) {
  Value iv = loop.getInductionVar();
  if (index == iv)
    return true;
  auto add = index.getDefiningOp<arith::AddIOp>();
  if (!add)
    return false;
  APInt offset;
  for (auto [base, other] : {std::pair(add.getLhs(), add.getRhs()),
                             std::pair(add.getRhs(), add.getLhs())}) {
    bool invariant = loop.isDefinedOutsideOfLoop(other);
    if (base == iv &&
        (invariant ||
         (matchPattern(other, m_ConstantInt(&offset)) && !offset.isNegative())))
      return true;
    if (matchPattern(other, m_ConstantInt(&offset)) && !offset.isNegative() &&
        isInductionRow(base, loop))
      return true;
  }
  return false;
}

/// The rows `read` streams with `loop`: a 1-D read of one whole row
/// (whole cache lines, the last index 0) of a static, identity-layout
/// memref at a row index that follows the loop's induction variable.
/// Returns the row's size in bytes, or 0.
static int64_t getStreamedRowBytes(vector::TransferReadOp read,
                                   scf::ForOp loop) {
  auto memref = dyn_cast<MemRefType>(read.getBase().getType());
  VectorType vector = read.getVectorType();
  if (!memref || !memref.hasStaticShape() || !memref.getLayout().isIdentity() ||
      memref.getRank() < 2 || vector.getRank() != 1 ||
      vector.getDimSize(0) != memref.getShape().back() ||
      !memref.getElementType().isIntOrFloat())
    return 0;
  int64_t rowBytes = memref.getShape().back() *
                     memref.getElementTypeBitWidth() / 8;
  ValueRange indices = read.getIndices();
  if (rowBytes % kLineBytes != 0 || !matchPattern(indices.back(), m_Zero()) ||
      !isInductionRow(indices[indices.size() - 2], loop))
    return 0;
  return rowBytes;
}

namespace {
struct LaminaCpuPrefetchRowsPass
    : mlir::lamina::impl::LaminaCpuPrefetchRowsBase<
          LaminaCpuPrefetchRowsPass> {
  void runOnOperation() override {
    getOperation()->walk([&](scf::ForOp loop) {
      auto distance = loop->getAttrOfType<IntegerAttr>(
          LaminaDialect::kPrefetchRowsAttrName);
      if (!distance)
        return;
      loop->removeAttr(LaminaDialect::kPrefetchRowsAttrName);
      for (auto read : loop.getBody()->getOps<vector::TransferReadOp>()) {
        int64_t rowBytes = getStreamedRowBytes(read, loop);
        if (rowBytes == 0)
          continue;
        auto memref = cast<MemRefType>(read.getBase().getType());
        unsigned rowDim = memref.getRank() - 2;
        int64_t ahead = llvm::divideCeil(distance.getInt(), rowBytes);
        OpBuilder b(read);
        Location loc = read.getLoc();
        SmallVector<Value> indices(read.getIndices());
        Value row = arith::AddIOp::create(
            b, loc, indices[rowDim],
            arith::ConstantIndexOp::create(b, loc, ahead));
        indices[rowDim] = arith::MinUIOp::create(
            b, loc, row,
            arith::ConstantIndexOp::create(b, loc,
                                           memref.getDimSize(rowDim) - 1));
        memref::PrefetchOp::create(b, loc, read.getBase(), indices,
                                   /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
      }
    });
  }
};
} // namespace
