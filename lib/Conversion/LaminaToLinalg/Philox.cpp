//===- Philox.cpp - Counter-based random numbers in arith -----------------===//

#include "lamina/Conversion/LaminaToLinalg/Philox.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;

// Constants of Philox-4x32 (Random123).
static constexpr uint32_t kMultiplier0 = 0xD2511F53;
static constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
static constexpr uint32_t kWeyl0 = 0x9E3779B9;
static constexpr uint32_t kWeyl1 = 0xBB67AE85;
static constexpr int kRounds = 10;

static Value constantI32(OpBuilder &b, Location loc, uint32_t value) {
  return arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(static_cast<int32_t>(value)));
}

namespace {
/// The 64-bit product of two u32 values, as (high, low) words. Written with
/// zext/muli/shrui rather than arith.mului_extended, which the LLVM lowering
/// does not handle on n-D vectors.
struct WideProduct {
  Value high, low;
};
} // namespace

static WideProduct multiplyWide(OpBuilder &b, Location loc, Value x, Value y) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value product = arith::MulIOp::create(b, loc,
                                        arith::ExtUIOp::create(b, loc, i64, x),
                                        arith::ExtUIOp::create(b, loc, i64, y));
  Value shift = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32));
  Value high = arith::TruncIOp::create(
      b, loc, i32, arith::ShRUIOp::create(b, loc, product, shift));
  Value low = arith::TruncIOp::create(b, loc, i32, product);
  return {high, low};
}

std::array<Value, 4>
mlir::lamina::buildPhilox4x32(OpBuilder &b, Location loc,
                              std::array<Value, 4> counter,
                              std::array<Value, 2> key) {
  Value m0 = constantI32(b, loc, kMultiplier0);
  Value m1 = constantI32(b, loc, kMultiplier1);
  Value w0 = constantI32(b, loc, kWeyl0);
  Value w1 = constantI32(b, loc, kWeyl1);
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      key[0] = arith::AddIOp::create(b, loc, key[0], w0);
      key[1] = arith::AddIOp::create(b, loc, key[1], w1);
    }
    WideProduct product0 = multiplyWide(b, loc, m0, counter[0]);
    WideProduct product1 = multiplyWide(b, loc, m1, counter[2]);
    Value word0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, product1.high, counter[1]),
        key[0]);
    Value word2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, product0.high, counter[3]),
        key[1]);
    counter = {word0, product1.low, word2, product0.low};
  }
  return counter;
}

std::array<Value, 4> mlir::lamina::buildDropoutKeepGroup(
    OpBuilder &b, Location loc, Value group, Value seed, uint64_t offset,
    Value offsetBase, Value stream, double p) {
  Type i32 = b.getI32Type();
  Type i64 = b.getI64Type();
  Value shift = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32));
  auto low = [&](Value v) { return arith::TruncIOp::create(b, loc, i32, v); };
  auto high = [&](Value v) {
    return arith::TruncIOp::create(b, loc, i32,
                                   arith::ShRUIOp::create(b, loc, v, shift));
  };
  Value offsetWord = constantI32(b, loc, static_cast<uint32_t>(offset));
  if (offsetBase)
    offsetWord =
        arith::AddIOp::create(b, loc, offsetWord, low(offsetBase));
  std::array<Value, 4> counter = {low(group), high(group), offsetWord, stream};
  std::array<Value, 2> key = {low(seed), high(seed)};
  std::array<Value, 4> words = buildPhilox4x32(b, loc, counter, key);

  // Drop iff word < round(p · 2^32): P(drop) = threshold / 2^32.
  auto threshold = static_cast<int64_t>(std::llround(p * 4294967296.0));
  Value limit =
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(threshold));
  std::array<Value, 4> keep;
  for (int w = 0; w < 4; ++w)
    keep[w] = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                    arith::ExtUIOp::create(b, loc, i64, words[w]),
                                    limit);
  return keep;
}

Value mlir::lamina::buildDropoutKeep(OpBuilder &b, Location loc, Value index,
                                     Value seed, uint64_t offset,
                                     Value offsetBase, Value stream,
                                     double p) {
  Value two = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(2));
  Value three = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(3));
  Value group = arith::ShRUIOp::create(b, loc, index, two);
  Value lane = arith::AndIOp::create(b, loc, index, three);
  std::array<Value, 4> keep =
      buildDropoutKeepGroup(b, loc, group, seed, offset, offsetBase, stream, p);
  Value chosen = keep[3];
  for (int w = 2; w >= 0; --w) {
    Value isLane = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, lane,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(w)));
    chosen = arith::SelectOp::create(b, loc, isLane, keep[w], chosen);
  }
  return chosen;
}
