//===- LnsCodes.h - Exact integer semantics of LNS codes --------*- C++ -*-===//
//
// The spec's integer operations on packed codes `p = 2·e + s`, shared by the
// folders. Addition is not here: it needs the Gaussian logarithms.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LNS_IR_LNSCODES_H
#define LAMINA_LNS_IR_LNSCODES_H

#include <cmath>
#include <cstdint>

namespace mlir::lamina::lns::codes {

/// The canonical zero code `-(2^53) | 1`; `-(2^53)` also means zero.
constexpr int64_t kZero = -(int64_t(1) << 53) | 1;

constexpr bool isZero(int64_t p) { return (p | 1) == kZero; }

/// The code of a double on the host, the encode rule of the spec: zero is
/// `kZero`, else `roundHalfEven(log|v| / logBase) << 1`, the sign in bit 0.
inline int64_t encode(double v, double logBase) {
  if (v == 0.0)
    return kZero;
  auto exponent =
      static_cast<int64_t>(std::nearbyint(std::log(std::fabs(v)) / logBase));
  return (exponent << 1) | (v < 0 ? 1 : 0);
}

// Arithmetic on codes wraps like the reference's int64 tensors; do it in
// unsigned so that it is defined behaviour in C++.
constexpr int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
constexpr int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
constexpr int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

constexpr int64_t mul(int64_t x, int64_t y) {
  if (isZero(x) || isZero(y))
    return kZero;
  return wrapSub(wrapAdd(x, y), y & 1) ^ (y & 1);
}

constexpr int64_t div(int64_t x, int64_t y) {
  if (isZero(x))
    return kZero;
  return wrapAdd(wrapSub(x, y), y & 1) ^ (y & 1);
}

constexpr int64_t neg(int64_t p) { return p ^ 1; }

constexpr int64_t abs(int64_t p) { return isZero(p) ? kZero : (p & ~int64_t(1)); }

constexpr int64_t sqrt(int64_t p) {
  return isZero(p) ? kZero : ((p >> 1) & ~int64_t(1));
}

constexpr int64_t powi(int64_t p, int64_t n) {
  if (isZero(p))
    return kZero;
  int64_t magnitude = wrapMul(p & ~int64_t(1), n) & ~int64_t(1);
  return (n & 1) ? (magnitude | (p & 1)) : magnitude;
}

} // namespace mlir::lamina::lns::codes

#endif // LAMINA_LNS_IR_LNSCODES_H
