//===- PiecewiseSbdb.h - Piecewise-cubic ideal sbdb -------------*- C++ -*-===//
//
// `ideal` sbdb(z, s) = 2·roundHalfEven(Q), Q = log|1 − 2s + pow(b, z)| / log b,
// approximated by one cubic per segment of v = −z, with a proven bound on
// the distance to the exact formula's double result: where the cubic's
// value is farther than that bound from a .5 tie, both round alike.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_CONVERSION_LNSTOARITH_PIECEWISESBDB_H
#define LAMINA_LIB_CONVERSION_LNSTOARITH_PIECEWISESBDB_H

#include "lamina/Lns/IR/Lns.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::lamina::lns {

/// Segments per octave of v + 1: the top 8 mantissa bits of its float.
inline constexpr int kSbdbSegmentBits = 8;

struct PiecewiseSbdb {
  /// Four coefficients per segment: Q ≈ c0 + c1·d + c2·d² + c3·d³ with
  /// d = v + 1 − (the segment's midpoint). Row 2·(j·256 + i) + s holds
  /// v + 1 ∈ [2^j·(1 + i/256), 2^j·(1 + (i + 1)/256)), s = 1 for opposite
  /// signs (both signs of a segment in one 64-byte line); octave 0 only
  /// v = 0. Octaves 0..octaves (one more than v + 1 < 2^octaves reaches:
  /// float(v + 1) may round up to 2^octaves).
  std::vector<double> coefficients;
  /// For v ≥ 2^octaves − 2 sbdb is 0 with both signs (the last segment's
  /// cubic gives it for every larger v).
  int64_t octaves = 0;
  /// |cubic − the exact formula's double result| ≤ bound on every segment
  /// but those of opposite signs and small v, where the exact formula itself
  /// is too far from Q (1 − pow(b, z) cancels): their c0 is NaN, so that
  /// they are always recomputed.
  double bound = 0;
};

/// The segments of `type`, or none where the bound is too loose to decide
/// most roundings (then the caller keeps the other fast path).
std::optional<PiecewiseSbdb> buildPiecewiseSbdb(NumType type);

} // namespace mlir::lamina::lns

#endif // LAMINA_LIB_CONVERSION_LNSTOARITH_PIECEWISESBDB_H
