//===- Epilogue.cpp - Register epilogue of the GPU linear kernels ---------===//

#include "GpuKernels.h"
#include "lamina/Conversion/LaminaToLinalg/EpilogueMath.h"
#include "lamina/Conversion/LaminaToLinalg/Philox.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::lamina;

/// One element: an activation derivative at `derivativeAt` (backward),
/// bias, activation, dropout keyed by the row-major index in the whole
/// output (the CPU path's stream), in f32.
static Value applyEpilogue(OpBuilder &b, Location loc, const GpuLinear &layer,
                           Value row, Value col, Value value,
                           Value derivativeAt) {
  if (layer.derivative)
    value = buildActivationDerivative(b, loc, layer.derivative.getValue(),
                                      extendToF32(b, loc, derivativeAt),
                                      value);
  if (layer.bias) {
    Value bias = memref::LoadOp::create(b, loc, layer.bias, col);
    value = arith::AddFOp::create(b, loc, value, extendToF32(b, loc, bias));
  }
  if (layer.activation)
    value = buildActivation(b, loc, layer.activation.getValue(), value);
  DropoutAttr dropout = layer.dropout;
  if (dropout && dropout.isActive()) {
    Value flat = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, row,
                              arith::ConstantIndexOp::create(b, loc, layer.n)),
        col);
    Value index64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), flat);
    double p = dropout.getProbability();
    Value keep = buildDropoutKeep(
        b, loc, index64, layer.seed, dropout.getOffset(), /*offsetBase=*/Value(),
        buildDropoutStream(b, loc, dropout, /*rank=*/Value()), p);
    value = buildDropoutApply(b, loc, value, keep, p);
  }
  return value;
}

void mlir::lamina::emitEpiloguePairStore(OpBuilder &b, Location loc,
                                         const GpuLinear &layer, Value row,
                                         Value col, Value v0, Value v1,
                                         bool checkRow, bool checkCol) {
  OpBuilder::InsertionGuard guard(b);
  Value inBounds;
  auto conjoin = [&](Value index, Value bound) {
    Value inside =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index, bound);
    inBounds =
        inBounds ? arith::AndIOp::create(b, loc, inBounds, inside) : inside;
  };
  if (checkRow)
    conjoin(row, layer.rows);
  if (checkCol)
    conjoin(col, arith::ConstantIndexOp::create(b, loc, layer.n));
  if (inBounds) {
    auto guardIf = scf::IfOp::create(b, loc, inBounds, false);
    b.setInsertionPointToStart(guardIf.thenBlock());
  }

  Value col1 = arith::AddIOp::create(b, loc, col,
                                     arith::ConstantIndexOp::create(b, loc, 1));
  Type outElt = cast<MemRefType>(layer.output.getType()).getElementType();
  // Columns are even, so a pair is aligned to its own size.
  int64_t pairBytes = 2 * outElt.getIntOrFloatBitWidth() / 8;
  Value at0, at1;
  if (layer.derivative) {
    Type atElt =
        cast<MemRefType>(layer.derivativeInput.getType()).getElementType();
    auto load = vector::LoadOp::create(b, loc, VectorType::get({2}, atElt),
                                       layer.derivativeInput,
                                       ValueRange{row, col});
    load.setAlignment(2 * atElt.getIntOrFloatBitWidth() / 8);
    at0 = vector::ExtractOp::create(b, loc, load, ArrayRef<int64_t>{0});
    at1 = vector::ExtractOp::create(b, loc, load, ArrayRef<int64_t>{1});
  }
  Value e0 = applyEpilogue(b, loc, layer, row, col, v0, at0);
  Value e1 = applyEpilogue(b, loc, layer, row, col1, v1, at1);
  auto pairType = VectorType::get({2}, b.getF32Type());
  Value pair =
      vector::FromElementsOp::create(b, loc, pairType, ValueRange{e0, e1});
  if (outElt != b.getF32Type())
    pair = arith::TruncFOp::create(b, loc, VectorType::get({2}, outElt), pair);
  auto store =
      vector::StoreOp::create(b, loc, pair, layer.output, ValueRange{row, col});
  store.setAlignment(pairBytes);
}
