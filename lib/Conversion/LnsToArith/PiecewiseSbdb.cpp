//===- PiecewiseSbdb.cpp - Piecewise-cubic ideal sbdb ---------------------===//
//
// With x = −v·ℓ (ℓ = ln b, b the double base), Q is F(x)/ℓ with
//   same signs:     F(x) = ln(1 + e^x), F'''' = σ''', |σ'''| ≤ min(e^x, 1/4);
//   opposite signs: F(x) = ln(1 − e^x), |F''''| = ρ(1 + ρ)(1 + 6ρ + 6ρ²),
//                   ρ = e^x / (1 − e^x), largest at the segment's end
//                   nearest 0.
// Segments cover v + 1 (so that v = 0, float 0, has a row of its own). Each
// segment's cubic interpolates Q (computed in long double) at the four
// Chebyshev nodes, so on a segment of half-width h (in v)
//   |cubic − Q| ≤ ℓ³·max|F''''|·h⁴ / (4!·2³)                        (fit)
//   + 8·2^-53·Σ|c_i|·h^i    (coefficients rounded to double, the FMAs)
// and the exact formula's double result (pow and log within one ulp, each
// operation rounded once) is within
//   (2^-52·u/|t| + 2^-53)·1.1/ℓ + 2^-50·|Q|                       (exact)
// of Q, with u = pow(b, z), t = ±1 + u; u/|t| ≤ 1/2 for the same signs and
// ρ for opposite ones. `bound` is the largest sum over the segments used.
//
//===----------------------------------------------------------------------===//

#include "PiecewiseSbdb.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::lamina::lns;

namespace {
/// Q(v) of one sign in long double.
struct ExactQ {
  long double logBase;
  bool opposite;

  long double operator()(long double v) const {
    long double x = -v * logBase;
    long double f =
        opposite ? std::log(-std::expm1(x)) : std::log1p(std::exp(x));
    return f / logBase;
  }

  /// max |F''''| over x ≤ −vLow·ℓ.
  long double fourthDerivativeBound(long double vLow) const {
    long double x = -vLow * logBase;
    if (!opposite)
      return std::min(std::exp(x), 0.25L);
    long double rho = 1.0L / std::expm1(-x);
    return rho * (1 + rho) * (1 + 6 * rho + 6 * rho * rho);
  }

  /// max u/|t| over x ≤ −vLow·ℓ.
  long double cancellation(long double vLow) const {
    return opposite ? 1.0L / std::expm1(vLow * logBase) : 0.5L;
  }
};

/// How far the exact formula's double result may be from Q where v ≥ vLow
/// and |Q| ≤ magnitude (the header's (exact) term).
long double exactFormulaError(const ExactQ &q, long double vLow,
                              long double magnitude) {
  return (std::ldexp(1.0L, -52) * q.cancellation(vLow) +
          std::ldexp(1.0L, -53)) *
             1.1L / q.logBase +
         std::ldexp(1.0L, -50) * magnitude * 1.01L;
}

/// The cubic through Q at the Chebyshev nodes of [center − h, center + h],
/// as coefficients of (v − center)^i, and its bound.
struct Segment {
  double coefficients[4];
  double bound;
};

Segment fitSegment(const ExactQ &q, long double center, long double h) {
  long double nodes[4], values[4];
  for (int k = 0; k < 4; ++k) {
    nodes[k] =
        std::cos((2 * k + 1) * 3.14159265358979323846264338327950288L / 8);
    values[k] = q(center + h * nodes[k]);
  }
  // Newton's divided differences, then the monomial form in t = d/h.
  long double divided[4];
  std::copy(values, values + 4, divided);
  for (int level = 1; level < 4; ++level)
    for (int k = 3; k >= level; --k)
      divided[k] =
          (divided[k] - divided[k - 1]) / (nodes[k] - nodes[k - level]);
  long double monomial[4] = {divided[3], 0, 0, 0};
  for (int k = 2; k >= 0; --k) {
    // monomial ← monomial·(t − nodes[k]) + divided[k]
    for (int i = 3; i > 0; --i)
      monomial[i] = monomial[i - 1] - nodes[k] * monomial[i];
    monomial[0] = divided[k] - nodes[k] * monomial[0];
  }
  Segment segment;
  long double magnitude = 0, scale = 1;
  for (int i = 0; i < 4; ++i) {
    segment.coefficients[i] = static_cast<double>(monomial[i] / scale);
    magnitude += std::fabs(monomial[i]);
    scale *= h;
  }
  long double vLow = center - h;
  long double l = q.logBase;
  long double fit =
      l * l * l * q.fourthDerivativeBound(vLow) * h * h * h * h / 192;
  long double rounding = 8 * std::ldexp(1.0L, -53) * magnitude;
  segment.bound = static_cast<double>(
      fit + rounding + exactFormulaError(q, vLow, magnitude));
  return segment;
}

/// The constant Q(v): rounding of Q to double and the exact formula's error.
Segment constantSegment(const ExactQ &q, long double v) {
  long double value = q(v);
  long double magnitude = std::fabs(value);
  return {{static_cast<double>(value), 0, 0, 0},
          static_cast<double>(std::ldexp(1.0L, -53) * magnitude +
                              exactFormulaError(q, v, magnitude))};
}
} // namespace

std::optional<PiecewiseSbdb>
mlir::lamina::lns::buildPiecewiseSbdb(NumType type) {
  // Segments looser than this are left to the exact formula (opposite
  // signs near cancellation) or disable the path.
  constexpr double kLargestBound = 0x1p-15;
  long double logBase = std::log(static_cast<long double>(type.getBase()));
  ExactQ same{logBase, false}, opposite{logBase, true};

  PiecewiseSbdb table;
  // |Q| decreases with v: from 2^octaves − 2 (the last segment's, at
  // v + 1 = 2^octaves − 1) on both signs round to 0, so larger v may take
  // the last segment's value.
  auto last = [&] { return std::ldexp(1.0L, table.octaves) - 2; };
  while (std::fabs(same(last())) >= 0.25L ||
         std::fabs(opposite(last())) >= 0.25L)
    if (++table.octaves > 50)
      return std::nullopt;

  // One octave more than v + 1 reaches: float(v + 1) may round up to
  // 2^octaves (segment 0 of octave `octaves`).
  int64_t tableOctaves = table.octaves + 1;
  constexpr int segments = 1 << kSbdbSegmentBits;
  table.coefficients.resize(2 * tableOctaves * segments * 4);
  double sameBound = 0;
  std::vector<double> octaveBounds(tableOctaves, 0.0);
  for (int sign = 0; sign < 2; ++sign) {
    const ExactQ &q = sign ? opposite : same;
    // Octave 0 holds v + 1 ∈ [1, 2): only v = 0, a constant (log_b 2 for
    // the same signs; opposite signs cancel, a rule of their own).
    Segment zero = sign ? Segment{{0, 0, 0, 0}, 0} : constantSegment(same, 0);
    for (int i = 0; i < segments; ++i)
      std::copy(zero.coefficients, zero.coefficients + 4,
                table.coefficients.begin() + (2 * i + sign) * 4);
    if (!sign)
      sameBound = zero.bound;
    for (int64_t j = 1; j < tableOctaves; ++j) {
      long double width = std::ldexp(1.0L, j - kSbdbSegmentBits);
      for (int i = 0; i < segments; ++i) {
        long double center = std::ldexp(1.0L, j) + (i + 0.5L) * width - 1;
        // Fitted a little beyond the segment: kernels that locate v through
        // float(v + 1) may take v up to 2^-15 of the half-width below it.
        Segment segment =
            fitSegment(q, center, width / 2 * (1 + std::ldexp(1.0L, -14)));
        std::copy(segment.coefficients, segment.coefficients + 4,
                  table.coefficients.begin() +
                      (2 * (j * segments + i) + sign) * 4);
        double &bound = sign ? octaveBounds[j] : sameBound;
        bound = std::max(bound, segment.bound);
      }
    }
  }
  if (!(sameBound <= kLargestBound))
    return std::nullopt;
  // Opposite signs: the octaves from the top down while their bound holds.
  table.bound = sameBound;
  int64_t lowest = tableOctaves;
  while (lowest > 1 && octaveBounds[lowest - 1] <= kLargestBound) {
    --lowest;
    table.bound = std::max(table.bound, octaveBounds[lowest]);
  }
  // Opposite signs with v below 2^lowest always take the exact formula;
  // where that covers magnitudes up to e^(1/64) apart (f ≥ 26), too many
  // additions would: the caller keeps its other fast path.
  if (lowest > 1 && std::ldexp(1.0L, lowest) * logBase > 1.0L / 64)
    return std::nullopt;
  // Below, the cubic's value is NaN: never within the bound of an integer.
  for (int64_t j = 1; j < lowest; ++j)
    for (int i = 0; i < segments; ++i)
      table.coefficients[(2 * (j * segments + i) + 1) * 4] =
          std::numeric_limits<double>::quiet_NaN();
  return table;
}
