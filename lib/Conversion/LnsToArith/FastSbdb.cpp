//===- FastSbdb.cpp - The certified fast path of ideal sbdb ---------------===//
//
// `ideal` mode defines sbdb(z, s) = 2·roundHalfEven(Q) with
//   Q = log|1 − 2s + pow(b, z)| / log b
// evaluated in double with libm's pow and log. Libm calls do not vectorize,
// so the fast path evaluates an approximation q of Q with polynomials only:
//
//   u = exp(z·L)            L = log b (the double the exact formula divides
//                           by); range reduction by ln 2 and a degree-12
//                           Taylor polynomial, |r| ≤ ln2/2: truncation
//                           error ≤ 0.347^13/13! < 2^-52 relative;
//   t = ±1 + u              rounded once, as in the exact formula;
//   log t = e·ln2 + 2·atanh(s), s = (m − 1)/(m + 1), m ∈ [√½, √2):
//                           |s| ≤ 0.1716, series to s^19: truncation error
//                           < 2^-56 relative;
//   q = log t · (1/L).
//
// Error bound (per element, against the exact formula's double result, not
// only against the real Q), with ε_x = |z·L|·2^-52 + 2^-48 the relative
// error of u (dominated by rounding z·L; pow's own result is within 2^-53):
//   |t − t_exact| ≤ ε_x·u + 2^-52·|t|       (both roundings of ±1 + u)
//   |log t − log t_exact| ≤ 1.01·(ε_x·u / |t| + 2^-52), and 1/|t| ≤
//                           1.5·2^-e where |t| = 2^e·m, m ∈ [√½, √2)
//   polynomial and rounding errors of both logs and both divisions
//                         ≤ 2^-46·|q|
//   |q − Q_exact| ≤ E = (ε_x·u/|t| + 2^-51)/L + 2^-46·|q|
// The fast path uses 4·E. Where q is farther than that from a .5 tie, both
// round to the same integer; elsewhere the element is flagged, and the
// caller recomputes it with the exact formula. Exhaustive comparisons with
// the exact formula (test/python/test_lns_fast_path.py) check the bound.
//
//===----------------------------------------------------------------------===//

#include "lamina/Conversion/LnsToArith/CodeBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include "llvm/ADT/bit.h"
#include <cmath>

using namespace mlir;
using namespace mlir::lamina::lns;

/// 1.5·2^52: integers of magnitude below 2^51 sit in its low mantissa bits.
static constexpr double kMagic = 6755399441055744.0;

bool mlir::lamina::lns::isFastSbdbExact(NumType type) {
  // z is clamped at −⌈746/L⌉ and |q| ≤ |log(L)|/L (z = −1, opposite signs)
  // must both stay below 2^51: L ≥ 2^-40 or so (f ≤ 40).
  double logBase = type.getLogBase();
  double limit = std::ldexp(1.0, 50);
  return 746.0 / logBase < limit &&
         std::fabs(std::log(logBase)) / logBase < limit;
}

/// ln 2 split so that k·kLn2Hi is exact for |k| < 2^11 (fdlibm's split).
static constexpr double kLn2Hi = 6.93147180369123816490e-01;
static constexpr double kLn2Lo = 1.90821492927058770002e-10;

Value CodeBuilder::evaluatePolynomial(ArrayRef<double> coefficients,
                                      Value x) {
  // Horner's rule: a few units in the last place of rounding error, and
  // the fewest operations (the kernel is throughput-bound).
  Value sum = f64(coefficients.back());
  for (double c : llvm::reverse(coefficients.drop_back()))
    sum = math::FmaOp::create(b, loc, sum, x, f64(c));
  return sum;
}

std::pair<Value, Value> CodeBuilder::fastIdealSbdb(Value z, Value sameSign,
                                                   NumType type) {
  Type f64Type = b.getF64Type(), i64Type = b.getI64Type();
  double logBase = type.getLogBase();
  auto fma = [&](Value a, Value x, Value c) -> Value {
    return math::FmaOp::create(b, loc, a, x, c);
  };
  auto mulf = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, loc, x, y);
  };
  auto addf = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, loc, x, y);
  };

  // Conversions between i64 and f64 have no AVX2 instruction; integers
  // below 2^51 in magnitude convert exactly through the bits of 1.5·2^52,
  // whose addition also rounds a double to the nearest (even) integer.
  Value magic = f64(kMagic);
  Value magicBits = i64(llvm::bit_cast<int64_t>(kMagic));
  auto toDouble = [&](Value integer) -> Value {
    return arith::SubFOp::create(
        b, loc,
        arith::BitcastOp::create(
            b, loc, f64Type, arith::AddIOp::create(b, loc, integer, magicBits)),
        magic);
  };
  // {roundHalfEven(value) as a double, as an i64}, |value| < 2^51.
  auto roundToInteger = [&](Value value) -> std::pair<Value, Value> {
    Value shifted = addf(value, magic);
    Value integer = arith::SubIOp::create(
        b, loc, arith::BitcastOp::create(b, loc, i64Type, shifted), magicBits);
    return {arith::SubFOp::create(b, loc, shifted, magic), integer};
  };

  // u = exp(x), x = z·L ≤ 0, clamped where u underflows to zero anyway
  // (z first, so that it converts exactly: see isFastSbdbExact).
  Value zClamped = arith::MaxSIOp::create(
      b, loc, z, i64(-static_cast<int64_t>(std::ceil(746.0 / logBase))));
  Value x = arith::MaximumFOp::create(
      b, loc, mulf(toDouble(zClamped), f64(logBase)), f64(-745.0));
  auto [k, ki] = roundToInteger(mulf(x, f64(1.0 / M_LN2)));
  Value r = fma(k, f64(-kLn2Hi), x);
  r = fma(k, f64(-kLn2Lo), r);
  // exp(r) = Σ r^n / n!, n ≤ 12.
  SmallVector<double> inverseFactorials = {1.0};
  for (int n = 1; n <= 12; ++n)
    inverseFactorials.push_back(inverseFactorials.back() / n);
  Value p = evaluatePolynomial(inverseFactorials, r);
  Value scale = arith::BitcastOp::create(
      b, loc, f64Type,
      arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, ki, i64(1023)),
                            i64(52)));
  Value underflows =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, ki, i64(-1022));
  Value u = select(underflows, f64(0.0), mulf(p, scale));

  // t = ±1 + u, then log|t| = e·ln2 + log m with m ∈ [√½, √2).
  Value t = addf(select(sameSign, f64(1.0), f64(-1.0)), u);
  Value magnitude = math::AbsFOp::create(b, loc, t);
  Value bits = arith::BitcastOp::create(b, loc, i64Type, magnitude);
  Value e = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, i64(52)), i64(1023));
  Value m = arith::BitcastOp::create(
      b, loc, f64Type,
      arith::OrIOp::create(
          b, loc, arith::AndIOp::create(b, loc, bits, i64((1LL << 52) - 1)),
          i64(1023LL << 52)));
  Value big = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, m,
                                    f64(M_SQRT2));
  m = select(big, mulf(m, f64(0.5)), m);
  e = arith::AddIOp::create(b, loc, e,
                            arith::ExtUIOp::create(b, loc, i64Type, big));
  Value s = arith::DivFOp::create(b, loc, addf(m, f64(-1.0)), addf(m, f64(1.0)));
  Value s2 = mulf(s, s);
  SmallVector<double> oddInverses;
  for (int n = 1; n <= 19; n += 2)
    oddInverses.push_back(1.0 / n);
  Value series = evaluatePolynomial(oddInverses, s2);
  Value logM = mulf(mulf(s, f64(2.0)), series);
  Value ef = toDouble(e);
  Value logT = fma(ef, f64(kLn2Hi), fma(ef, f64(kLn2Lo), logM));
  // Multiplying by 1/L instead of dividing adds one rounding (≤ 2^-53·|q|),
  // inside the bound's 2^-46·|q| term.
  Value q = mulf(logT, f64(1.0 / logBase));

  // The bound E of the header, used four times over. 1/|t| is bounded
  // without a division: |t| = 2^e·m with m ≥ √½, so 1/|t| ≤ 1.5·2^-e.
  Value absX = math::AbsFOp::create(b, loc, x);
  Value uError = mulf(fma(absX, f64(std::ldexp(1.0, -52)),
                          f64(std::ldexp(1.0, -48))),
                      u);
  Value inverseScale = arith::BitcastOp::create(
      b, loc, f64Type,
      arith::ShLIOp::create(b, loc,
                            arith::SubIOp::create(b, loc, i64(1023), e),
                            i64(52)));
  Value tError = fma(mulf(uError, f64(1.5)), inverseScale,
                     f64(std::ldexp(1.0, -51)));
  Value bound = fma(math::AbsFOp::create(b, loc, q), f64(std::ldexp(1.0, -46)),
                    mulf(tError, f64(1.0 / logBase)));
  // q is decided unless it lies within 4·E of a .5 tie: |q − rint(q)| must
  // stay below 0.5 − 4·E. A q that is not finite fails the comparison.
  // |q| < 2^51 by isFastSbdbExact.
  auto [nearest, integer] = roundToInteger(q);
  Value fromNearest = math::AbsFOp::create(
      b, loc, arith::SubFOp::create(b, loc, q, nearest));
  Value nearTie = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::UGE, fromNearest,
      fma(bound, f64(-4.0), f64(0.5)));
  // A flagged element is recomputed: its fast value does not matter.
  Value sbdb = arith::ShLIOp::create(b, loc, integer, i64(1));
  return {sbdb, nearTie};
}
