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

#include <vector>

namespace mlir::lamina::lns {

/// Precomputed `sbdb` values (`table` mode): entry i holds
/// roundHalfEven(log|1 − 2s + pow(b, −i)| / log b) for i in [0, size), one
/// i32 tensor per sign s; beyond the table sbdb is 0.
struct SbdbTables {
  Value sameSign, oppositeSign;
  int64_t size = 0;
};

/// The number of table entries for `type`: z from 0 down to
/// 2·round(log_b(b − 1)), past which sbdb is 0 for both signs.
int64_t getSbdbTableSize(NumType type);

/// The ideal sbdb values of a table, computed on the host in double exactly
/// as the `ideal` mode computes them at run time.
std::vector<int32_t> computeSbdbTable(NumType type, bool oppositeSigns);

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
  /// Gaussian-log addition in `type`'s base: `ideal` mode, or `table` mode
  /// when `tables` holds the precomputed values.
  Value add(Value x, Value y, NumType type, const SbdbTables *tables = nullptr);
  Value sub(Value x, Value y, NumType type, const SbdbTables *tables = nullptr);

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
