//===- CodeBuilder.h - LNS arithmetic on int64 codes as arith ops -*- C++ -*-===//
//
// The spec's scalar formulas (../spec/lns.md) emitted as arith and math ops
// on i64 codes: one place that the CPU lowering and, later, the GPU kernels
// share, so that both compute the same codes.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LNSTOARITH_CODEBUILDER_H
#define LAMINA_CONVERSION_LNSTOARITH_CODEBUILDER_H

#include "lamina/Lns/IR/Lns.h"

#include "mlir/IR/Builders.h"

namespace mlir::lamina::lns {

class CodeBuilder {
public:
  CodeBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  Value constantCode(int64_t code);
  Value isZero(Value code);

  Value mul(Value x, Value y);
  Value div(Value x, Value y);
  Value neg(Value x);
  Value abs(Value x);
  Value sqrt(Value x);
  Value powi(Value x, int64_t n);
  /// Gaussian-log addition in `type`'s base, `ideal` mode.
  Value add(Value x, Value y, NumType type);
  Value sub(Value x, Value y, NumType type);

  /// A float (any width, widened exactly to f64) to a code of `type`.
  Value encode(Value value, NumType type);
  /// A code of `type` to a float of `resultType` (computed in f64).
  Value decode(Value code, NumType type, FloatType resultType);
  /// A code of `from` re-expressed in `to`'s base (zero stays zero).
  Value changeBase(Value code, NumType from, NumType to);
  /// changeBase when the bases differ, else `code` unchanged.
  Value toBase(Value code, NumType from, NumType to);

private:
  Value i64(int64_t value);
  Value f64(double value);
  Value select(Value condition, Value ifTrue, Value ifFalse);
  /// roundHalfEven(value) as an i64 (value finite).
  Value roundToCode(Value value);

  OpBuilder &b;
  Location loc;
};

} // namespace mlir::lamina::lns

#endif // LAMINA_CONVERSION_LNSTOARITH_CODEBUILDER_H
