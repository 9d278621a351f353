//===- CodeBuilder.h - LNS arithmetic on int64 codes as arith ops -*- C++ -*-===//
//
// The spec's scalar formulas (../spec/lns.md) emitted as arith and math ops
// on i64 codes: one place that the CPU lowering and the GPU kernels
// share, so that both compute the same codes.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LNSTOARITH_CODEBUILDER_H
#define LAMINA_CONVERSION_LNSTOARITH_CODEBUILDER_H

#include "lamina/Lns/IR/Lns.h"

#include "mlir/IR/Builders.h"

#include <vector>

namespace mlir::lamina::lns {

/// Precomputed `sbdb` values (`table` mode): entry 2i + s of one i32
/// tensor holds roundHalfEven(log|1 − 2s + pow(b, −i)| / log b) for i in
/// [0, size) (the two signs interleaved: one lookup per addition); beyond
/// the table sbdb is 0. A memref (GPU kernels) is read with memref.load.
struct SbdbTables {
  Value interleaved;
  int64_t size = 0;
  /// The entries, on the host (for kernels that derive their own tables).
  std::vector<int32_t> values;
};

/// The number of table entries for `type`: z from 0 down to the last z
/// where sbdb is not 0 for some sign (at least the reference's bound,
/// 2·round(log_b(b − 1))); past it sbdb is 0 for both signs.
int64_t getSbdbTableSize(NumType type);

/// The ideal sbdb values of `type`'s table in the layout of SbdbTables
/// (entry 2i + s), computed on the host in double exactly as the `ideal`
/// mode computes them at run time.
std::vector<int32_t> computeInterleavedSbdbTable(NumType type);

/// Whether the fast path of `ideal` sbdb (CodeBuilder::addFast) holds for
/// `type`: its integer conversions need |z·L| and |sbdb| within 2^50, true
/// up to f = 40.
bool isFastSbdbExact(NumType type);

/// Whether every `ideal` sbdb of `type` stays below 2^29 in magnitude (the
/// largest is at z = −1 with opposite signs), as i32 kernels need.
bool isNarrowSbdb(NumType type);

/// The zero code of narrow (i32) codes: an exponent of −2^30, below every
/// narrow code's (all above −0.75·2^30), as −2^52 is below every i64
/// code's.
inline constexpr int64_t kNarrowZero = -(int64_t(1) << 31) + 1;

/// Builds LNS arithmetic on codes of `codeType`: i64 (the packed codes of
/// the spec) or, for kernels over codes known to be small, i32 (zero is
/// kNarrowZero). Encode, decode and changes of base take i64 codes only;
/// `ideal` additions on i32 codes need |sbdb| < 2^29 (isNarrowSbdb). With
/// `lanes` > 0 the operands are vector<lanes x code> and every constant is
/// a splat (explicitly vectorized kernels); scalars otherwise.
class CodeBuilder {
public:
  CodeBuilder(OpBuilder &builder, Location loc)
      : b(builder), loc(loc), codeType(builder.getI64Type()) {}
  CodeBuilder(OpBuilder &builder, Location loc, IntegerType codeType,
              int64_t lanes = 0)
      : b(builder), loc(loc), codeType(codeType), lanes(lanes) {}

  Value constantCode(int64_t code);
  Value isZero(Value code);
  /// Whether the sign bit of `x` is set (Z included).
  Value isNegative(Value x);
  /// max(x, y) + sbdb, with the zero and cancellation rules of `add`.
  Value combine(Value x, Value y, Value sbdb);
  /// A constant of `scalar`'s type, splat over the lanes if any.
  Value constant(TypedAttr scalar);
  /// `element`, or vector<lanes x element>.
  Type shaped(Type element) const;

  Value mul(Value x, Value y);
  Value div(Value x, Value y);
  Value neg(Value x);
  Value abs(Value x);
  Value sqrt(Value x);
  Value powi(Value x, int64_t n);
  /// x > y in the reference's order: sign first (positive above
  /// negative), then the exponent; zero codes compare with their bits.
  Value greater(Value x, Value y);
  /// x == y as codes.
  Value equal(Value x, Value y);
  Value logicalNot(Value condition);
  /// gt(x, y) ? x : y and lt(x, y) ? x : y.
  Value maximum(Value x, Value y);
  Value minimum(Value x, Value y);
  Value relu(Value x);
  Value reluGrad(Value grad, Value output);
  /// `(x & 1) ? mul(x, slope) : x`, and its backward
  /// `mul(g, (x & 1) || isZero(x) ? slope : c1)`.
  Value leakyRelu(Value x, Value slope);
  Value leakyReluGrad(Value grad, Value x, Value slope);
  /// e^x, the reference's way: trunc(c_e · decode(x)) & -2 with c_e the
  /// code of float32 e (the product clamped to ±2^53).
  Value exp(Value x, NumType type);
  /// encode(function(decode(x))), `function` on f64.
  Value throughFloat(
      Value x, NumType type,
      function_ref<Value(OpBuilder &, Location, Value)> function);
  /// Gaussian-log addition in `type`'s base: `ideal` mode, or `table` mode
  /// when `tables` holds the precomputed values.
  Value add(Value x, Value y, NumType type, const SbdbTables *tables = nullptr);
  Value sub(Value x, Value y, NumType type, const SbdbTables *tables = nullptr);
  /// `ideal` addition through the certified fast path (FastSbdb.cpp): the
  /// sbdb term from vectorizable polynomials, no libm call, with an error
  /// bound per element. Returns the sum and `nearTie` (i1): where set, the
  /// bound cannot decide the rounding and `add` must recompute the sum;
  /// elsewhere the sum equals `add`'s bit for bit.
  std::pair<Value, Value> addFast(Value x, Value y, NumType type);

  /// A float (any width, widened exactly to f64) to a code of `type`.
  Value encode(Value value, NumType type);
  /// A code of `type` to a float of `resultType` (computed in f64).
  Value decode(Value code, NumType type, FloatType resultType);
  /// A code of `from` re-expressed in `to`'s base (zero stays zero).
  Value changeBase(Value code, NumType from, NumType to);
  /// changeBase when the bases differ, else `code` unchanged.
  Value toBase(Value code, NumType from, NumType to);

private:
  /// z = −|(x >> 1) − (y >> 1)| and whether the signs agree.
  struct SbdbOperands {
    Value z, sameSign;
  };
  SbdbOperands getSbdbOperands(Value x, Value y);
  /// Whether add(x, y) takes no sbdb: a zero operand or x + (−x).
  Value isExactSum(Value x, Value y);
  /// The fast path's sbdb (even i64) and its near-tie flag.
  std::pair<Value, Value> fastIdealSbdb(Value z, Value sameSign, NumType type);
  /// table[position] (i32) for a scalar position; for vectors one
  /// gather of the lanes' positions.
  Value lookUp(Value table, Value position);
  /// Σ coefficients[i]·x^i in f64, by Horner's rule.
  Value evaluatePolynomial(ArrayRef<double> coefficients, Value x);

  Value i64(int64_t value);
  /// A constant of the code type.
  Value code(int64_t value);
  int64_t zeroCode() const;
  Value f64(double value);
  Value select(Value condition, Value ifTrue, Value ifFalse);
  /// roundHalfEven(value) as an i64 (value finite).
  Value roundToCode(Value value);

  OpBuilder &b;
  Location loc;
  IntegerType codeType;
  int64_t lanes = 0;
};

} // namespace mlir::lamina::lns

#endif // LAMINA_CONVERSION_LNSTOARITH_CODEBUILDER_H
