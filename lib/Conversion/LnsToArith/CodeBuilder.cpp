//===- CodeBuilder.cpp - LNS arithmetic on int64 codes as arith ops -------===//

#include "lamina/Conversion/LnsToArith/CodeBuilder.h"
#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

#include <limits>

using namespace mlir;
using namespace mlir::lamina::lns;

Type CodeBuilder::shaped(Type element) const {
  return lanes ? VectorType::get({lanes}, element) : element;
}

Value CodeBuilder::constant(TypedAttr scalar) {
  if (!lanes)
    return arith::ConstantOp::create(b, loc, scalar);
  auto type = VectorType::get({lanes}, scalar.getType());
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, scalar));
}

Value CodeBuilder::i64(int64_t value) {
  return constant(b.getI64IntegerAttr(value));
}

Value CodeBuilder::code(int64_t value) {
  return constant(b.getIntegerAttr(codeType, value));
}

int64_t CodeBuilder::zeroCode() const {
  return codeType.getWidth() == 64 ? codes::kZero : kNarrowZero;
}

Value CodeBuilder::f64(double value) {
  return constant(b.getF64FloatAttr(value));
}

Value CodeBuilder::select(Value condition, Value ifTrue, Value ifFalse) {
  return arith::SelectOp::create(b, loc, condition, ifTrue, ifFalse);
}

Value CodeBuilder::constantCode(int64_t value) {
  return code(value == codes::kZero ? zeroCode() : value);
}

Value CodeBuilder::isZero(Value value) {
  Value withSign = arith::OrIOp::create(b, loc, value, code(1));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, withSign,
                               code(zeroCode()));
}

Value CodeBuilder::roundToCode(Value value) {
  Value rounded = math::RoundEvenOp::create(b, loc, value);
  return arith::FPToSIOp::create(b, loc, shaped(b.getI64Type()), rounded);
}

Value CodeBuilder::mul(Value x, Value y) {
  // (x + y − (y & 1)) ^ (y & 1): exponents add, signs xor.
  Value ySign = arith::AndIOp::create(b, loc, y, code(1));
  Value sum = arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, x, y),
                                    ySign);
  Value product = arith::XOrIOp::create(b, loc, sum, ySign);
  Value anyZero = arith::OrIOp::create(b, loc, isZero(x), isZero(y));
  return select(anyZero, code(zeroCode()), product);
}

Value CodeBuilder::div(Value x, Value y) {
  // (x − y + (y & 1)) ^ (y & 1)
  Value ySign = arith::AndIOp::create(b, loc, y, code(1));
  Value difference = arith::AddIOp::create(
      b, loc, arith::SubIOp::create(b, loc, x, y), ySign);
  Value quotient = arith::XOrIOp::create(b, loc, difference, ySign);
  return select(isZero(x), code(zeroCode()), quotient);
}

Value CodeBuilder::neg(Value x) {
  return arith::XOrIOp::create(b, loc, x, code(1));
}

Value CodeBuilder::abs(Value x) {
  Value magnitude = arith::AndIOp::create(b, loc, x, code(~int64_t(1)));
  return select(isZero(x), code(zeroCode()), magnitude);
}

Value CodeBuilder::sqrt(Value x) {
  // Exponent floor(e / 2), sign dropped: (p >> 1) & -2.
  Value half = arith::ShRSIOp::create(b, loc, x, code(1));
  Value root = arith::AndIOp::create(b, loc, half, code(~int64_t(1)));
  return select(isZero(x), code(zeroCode()), root);
}

Value CodeBuilder::powi(Value x, int64_t n) {
  Value exponent = arith::AndIOp::create(b, loc, x, code(~int64_t(1)));
  Value power = arith::AndIOp::create(
      b, loc, arith::MulIOp::create(b, loc, exponent, code(n)),
      code(~int64_t(1)));
  if (n & 1)
    power = arith::OrIOp::create(b, loc, power,
                                 arith::AndIOp::create(b, loc, x, code(1)));
  return select(isZero(x), code(zeroCode()), power);
}

Value CodeBuilder::greater(Value x, Value y) {
  // Of two numbers of one sign the codes order as the exponents do
  // (p = 2e + s); a negative pair orders the other way round.
  Value one = code(1);
  Value xSign = arith::AndIOp::create(b, loc, x, one);
  Value ySign = arith::AndIOp::create(b, loc, y, one);
  Value signsDiffer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                            xSign, ySign);
  Value xPositive = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          xSign, code(0));
  Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, y);
  Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  Value sameSign = select(xPositive, above, below);
  return select(signsDiffer, xPositive, sameSign);
}

Value CodeBuilder::equal(Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
}

Value CodeBuilder::logicalNot(Value condition) {
  return arith::XOrIOp::create(b, loc, condition,
                               constant(b.getBoolAttr(true)));
}

Value CodeBuilder::maximum(Value x, Value y) {
  return select(greater(x, y), x, y);
}

Value CodeBuilder::minimum(Value x, Value y) {
  return select(greater(y, x), x, y);
}

Value CodeBuilder::isNegative(Value x) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                               arith::AndIOp::create(b, loc, x, code(1)),
                               code(0));
}

Value CodeBuilder::relu(Value x) {
  return select(isNegative(x), code(zeroCode()), x);
}

Value CodeBuilder::reluGrad(Value grad, Value output) {
  Value anyZero = arith::OrIOp::create(b, loc, isZero(grad), isZero(output));
  return select(anyZero, code(zeroCode()), grad);
}

Value CodeBuilder::leakyRelu(Value x, Value slope) {
  return select(isNegative(x), mul(x, slope), x);
}

Value CodeBuilder::leakyReluGrad(Value grad, Value x, Value slope) {
  Value leaky = arith::OrIOp::create(b, loc, isNegative(x), isZero(x));
  return mul(grad, select(leaky, slope, code(0)));
}

/// The code of the reference's e, float32 e (torch.exp of a float32 one),
/// in `type`'s base: the encode rule on the host.
static int64_t referenceECode(NumType type) {
  return codes::encode(static_cast<float>(2.718281828459045),
                       type.getLogBase());
}

Value CodeBuilder::exp(Value x, NumType type) {
  double limit = std::ldexp(1.0, 53);
  Value product =
      arith::MulFOp::create(b, loc, f64(static_cast<double>(referenceECode(type))),
                            decode(x, type, b.getF64Type()));
  product = arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, product, f64(-limit)),
      f64(limit));
  // fptosi truncates toward zero, as the reference's trunc.
  Value exponent = arith::FPToSIOp::create(b, loc, shaped(b.getI64Type()),
                                           product);
  return arith::AndIOp::create(b, loc, exponent, i64(-2));
}

Value CodeBuilder::throughFloat(
    Value x, NumType type,
    function_ref<Value(OpBuilder &, Location, Value)> function) {
  return encode(function(b, loc, decode(x, type, b.getF64Type())), type);
}

bool mlir::lamina::lns::isNarrowSbdb(NumType type) {
  // |sbdb| is largest at z = −1, opposite signs: 2·|log(1 − 1/b) / log b|.
  double largest = 2.0 * std::fabs(std::log(1.0 - 1.0 / type.getBase()) /
                                   type.getLogBase());
  return largest < std::ldexp(1.0, 29) - 2;
}

/// The ideal sbdb at z = −i for operands of equal or opposite signs, as
/// `ideal` mode computes it (z = 0 with opposite signs is an exact
/// cancellation, handled before any table is read: 0 here).
static int32_t idealSbdbAt(NumType type, int64_t i, bool oppositeSigns) {
  double sum = (oppositeSigns ? -1.0 : 1.0) +
               std::pow(type.getBase(), -static_cast<double>(i));
  return sum == 0.0 ? 0
                    : static_cast<int32_t>(std::nearbyint(
                          std::log(std::fabs(sum)) / type.getLogBase()));
}

int64_t mlir::lamina::lns::getSbdbTableSize(NumType type) {
  // The closed-form bound 2·round(log_b(b − 1)) misses rows where sbdb is
  // not yet 0 when it is small (f = 0: z = −1, sbdb ±1): the table ends at
  // the first z < 0 where both signs' sbdb is 0, as |sbdb| only decreases
  // from there.
  double base = type.getBase();
  double lowest = 2.0 * std::round(std::log(base - 1.0) / type.getLogBase());
  int64_t size = static_cast<int64_t>(-lowest) + 1;
  auto isZeroRow = [&](int64_t i) {
    return idealSbdbAt(type, i, false) == 0 && idealSbdbAt(type, i, true) == 0;
  };
  while (!isZeroRow(size))
    ++size;
  return size;
}

/// One sign's ideal sbdb values for z = 0, −1, ..., −(size − 1).
static std::vector<int32_t> computeSbdbTable(NumType type, bool oppositeSigns) {
  std::vector<int32_t> table(getSbdbTableSize(type));
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = idealSbdbAt(type, i, oppositeSigns);
  return table;
}

std::vector<int32_t>
mlir::lamina::lns::computeInterleavedSbdbTable(NumType type) {
  std::vector<int32_t> same = computeSbdbTable(type, false);
  std::vector<int32_t> opposite = computeSbdbTable(type, true);
  std::vector<int32_t> interleaved;
  interleaved.reserve(2 * same.size());
  for (auto [s, o] : llvm::zip_equal(same, opposite))
    interleaved.insert(interleaved.end(), {s, o});
  return interleaved;
}

CodeBuilder::SbdbOperands CodeBuilder::getSbdbOperands(Value x, Value y) {
  // z = −|(x >> 1) − (y >> 1)| ≤ 0, s = (x ^ y) & 1.
  Value ex = arith::ShRSIOp::create(b, loc, x, code(1));
  Value ey = arith::ShRSIOp::create(b, loc, y, code(1));
  Value d = arith::SubIOp::create(b, loc, ex, ey);
  Value negD = arith::SubIOp::create(b, loc, code(0), d);
  Value z = arith::MinSIOp::create(b, loc, d, negD);
  Value s = arith::AndIOp::create(b, loc, arith::XOrIOp::create(b, loc, x, y),
                                  code(1));
  return {z, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s,
                                   code(0))};
}

Value CodeBuilder::combine(Value x, Value y, Value sbdb) {
  Value result =
      arith::AddIOp::create(b, loc, arith::MaxSIOp::create(b, loc, x, y), sbdb);
  // Zero operands return the other operand bit for bit; x + (−x) is zero.
  Value cancels = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        neg(x), y);
  result = select(cancels, code(zeroCode()), result);
  result = select(isZero(y), x, result);
  return select(isZero(x), y, result);
}

std::pair<Value, Value> CodeBuilder::addFast(Value x, Value y, NumType type) {
  auto [z, sameSign] = getSbdbOperands(x, y);
  auto [sbdb, nearTie] = fastIdealSbdb(z, sameSign, type);
  // Zero operands and cancellations take no sbdb: never a near tie.
  Value inexact = arith::XOrIOp::create(b, loc, isExactSum(x, y),
                                        constant(b.getBoolAttr(true)));
  nearTie = arith::AndIOp::create(b, loc, nearTie, inexact);
  return {combine(x, y, sbdb), nearTie};
}

Value CodeBuilder::isExactSum(Value x, Value y) {
  return arith::OrIOp::create(
      b, loc, arith::OrIOp::create(b, loc, isZero(x), isZero(y)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, neg(x), y));
}

Value CodeBuilder::lookUp(Value table, Value position) {
  if (lanes) {
    // One gather per vector; positions (< 2^31) as i32 offsets.
    auto i32Lanes = VectorType::get({lanes}, b.getI32Type());
    if (codeType.getWidth() > 32)
      position = arith::TruncIOp::create(b, loc, i32Lanes, position);
    Value all = constant(b.getBoolAttr(true));
    Value none = constant(b.getI32IntegerAttr(0));
    return vector::GatherOp::create(b, loc, i32Lanes, table,
                                    ValueRange{arith::ConstantIndexOp::create(
                                        b, loc, 0)},
                                    position, all, none, IntegerAttr());
  }
  Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), position);
  if (isa<MemRefType>(table.getType()))
    return memref::LoadOp::create(b, loc, table, at);
  return tensor::ExtractOp::create(b, loc, table, at);
}

Value CodeBuilder::add(Value x, Value y, NumType type,
                       const SbdbTables *tables) {
  auto [z, sameSign] = getSbdbOperands(x, y);
  Value sbdb;
  if (tables) {
    // table mode: entry 2·(−z) + s, 0 past the table's end.
    Value offset = arith::SubIOp::create(b, loc, code(0), z);
    Value last = code(tables->size - 1);
    Value inTable = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                          offset, last);
    Value s = arith::ExtUIOp::create(
        b, loc, shaped(codeType),
        arith::XOrIOp::create(
            b, loc, sameSign,
            constant(b.getBoolAttr(true))));
    Value position = arith::AddIOp::create(
        b, loc,
        arith::ShLIOp::create(b, loc,
                              arith::MinSIOp::create(b, loc, offset, last),
                              code(1)),
        s);
    Value entry = lookUp(tables->interleaved, position);
    if (codeType.getWidth() > 32)
      entry = arith::ExtSIOp::create(b, loc, shaped(codeType), entry);
    sbdb = select(inTable, arith::ShLIOp::create(b, loc, entry, code(1)),
                  code(0));
  } else {
    // sbdb(z, s) = 2·roundHalfEven(log|1 − 2s + pow(b, z)| / log b), in
    // double exactly as written: 1 − 2s is ±1.0, added to pow(b, z) first.
    Value one = select(sameSign, f64(1.0), f64(-1.0));
    Value zf = arith::SIToFPOp::create(b, loc, shaped(b.getF64Type()), z);
    Value power = math::PowFOp::create(b, loc, f64(type.getBase()), zf);
    Value sum = arith::AddFOp::create(b, loc, one, power);
    Value logarithm =
        math::LogOp::create(b, loc, math::AbsFOp::create(b, loc, sum));
    Value quotient =
        arith::DivFOp::create(b, loc, logarithm, f64(type.getLogBase()));
    // |sbdb| < 2^29 wherever narrow codes are used (isNarrowSbdb).
    Value rounded = roundToCode(quotient);
    if (codeType.getWidth() < 64)
      rounded = arith::TruncIOp::create(b, loc, shaped(codeType), rounded);
    sbdb = arith::ShLIOp::create(b, loc, rounded, code(1));
  }
  return combine(x, y, sbdb);
}

Value CodeBuilder::sub(Value x, Value y, NumType type,
                       const SbdbTables *tables) {
  return add(x, neg(y), type, tables);
}

Value CodeBuilder::encode(Value value, NumType type) {
  Type f64Type = b.getF64Type();
  if (value.getType() != f64Type)
    value = arith::ExtFOp::create(b, loc, f64Type, value);
  Value magnitude = math::AbsFOp::create(b, loc, value);
  // Non-finite inputs get documented codes: ±inf the largest magnitude of
  // that sign, NaN the zero sentinel. fptosi would make them poison.
  Value finite = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLT, magnitude,
      f64(std::numeric_limits<double>::infinity()));
  Value safe = select(finite, magnitude, f64(1.0));
  Value exponent = roundToCode(arith::DivFOp::create(
      b, loc, math::LogOp::create(b, loc, safe), f64(type.getLogBase())));
  Value negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                         value, f64(0.0));
  Value sign = arith::ExtUIOp::create(b, loc, b.getI64Type(), negative);
  Value code = arith::OrIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, exponent, i64(1)), sign);
  Value largest =
      arith::OrIOp::create(b, loc, i64(std::numeric_limits<int64_t>::max() - 1),
                           sign);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                      value, value);
  Value nonFinite = select(isNaN, i64(codes::kZero), largest);
  code = select(finite, code, nonFinite);
  Value isZeroValue = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            value, f64(0.0));
  return select(isZeroValue, i64(codes::kZero), code);
}

Value CodeBuilder::decode(Value code, NumType type, FloatType resultType) {
  Value exponent = arith::SIToFPOp::create(
      b, loc, b.getF64Type(), arith::ShRSIOp::create(b, loc, code, i64(1)));
  Value magnitude = math::PowFOp::create(b, loc, f64(type.getBase()), exponent);
  Value negative = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::AndIOp::create(b, loc, code, i64(1)), i64(0));
  Value sign = select(negative, f64(-1.0), f64(1.0));
  Value value = arith::MulFOp::create(b, loc, sign, magnitude);
  value = select(isZero(code), f64(0.0), value);
  if (resultType != b.getF64Type())
    value = arith::TruncFOp::create(b, loc, resultType, value);
  return value;
}

Value CodeBuilder::changeBase(Value code, NumType from, NumType to) {
  // e' = roundHalfEven((double(e) · log b_old) / log b_new), sign kept.
  Value exponent = arith::SIToFPOp::create(
      b, loc, b.getF64Type(), arith::ShRSIOp::create(b, loc, code, i64(1)));
  Value scaled = arith::DivFOp::create(
      b, loc, arith::MulFOp::create(b, loc, exponent, f64(from.getLogBase())),
      f64(to.getLogBase()));
  Value converted = arith::OrIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, roundToCode(scaled), i64(1)),
      arith::AndIOp::create(b, loc, code, i64(1)));
  return select(isZero(code), i64(codes::kZero), converted);
}

Value CodeBuilder::toBase(Value code, NumType from, NumType to) {
  return from.hasSameBase(to) ? code : changeBase(code, from, to);
}
