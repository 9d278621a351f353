//===- PiecewiseKernel.cpp - LNS linear layers on piecewise-cubic sbdb ----===//
//
// `ideal` x[M, K]·W[N, K]ᵀ (+ b) as explicit vector code: for each row m,
// the accumulators of its N outputs take the terms k = 0..K−1 in order, a
// vector of outputs at a time (4 lanes of i64 codes, or 8 of i32 codes
// when every code is small). sbdb comes from the piecewise cubics of
// PiecewiseSbdb.cpp. Each step sweeps a row twice: the first pass stores
// the terms, every lane's table row and its offset in the segment; the
// second loads each lane's 32-byte row of coefficients first thing (no
// dependency chain before it, so that consecutive vectors overlap the
// loads' latency), interleaves them into coefficient vectors and evaluates
// the cubics with FMAs. Lanes whose rounding the bound cannot decide are
// recomputed with the exact formula after the sweep, so every sum is the
// `ideal` one bit for bit.
//
// The accumulators are buffers (memref.alloc, then one to_tensor): a
// recomputed vector overwrites its fast sums in place, which tensor SSA
// would have to copy.
//
//===----------------------------------------------------------------------===//

#include "LinearKernels.h"
#include "PiecewiseSbdb.h"

#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::lns;

namespace {
/// 1.5·2^52: integers below 2^51 in magnitude sit in its low mantissa bits.
constexpr double kMagic = 6755399441055744.0;
/// The lanes of one vector of codes: 4 × i64 or 8 × i32 (one AVX2 register).
int64_t lanesOf(IntegerType codeType) { return 256 / codeType.getWidth(); }

/// One `ideal` addition on vectors of codes through the cubics.
class PiecewiseAdder {
public:
  PiecewiseAdder(OpBuilder &b, Location loc, IntegerType codeType,
                 const PiecewiseSbdb &segments, Value table)
      : b(b), loc(loc), codeType(codeType), lanes(lanesOf(codeType)),
        codes(b, loc, codeType, lanes), wide(b, loc, b.getI64Type(), lanes),
        segments(segments), table(table) {}

  /// The integer half of add(x, y): the lanes' table rows (a vector of the
  /// code type) and offsets d in their segments (f64).
  std::pair<Value, Value> locate(Value x, Value y);
  /// The floating-point half, from the offsets and the rows stored in
  /// `rows` from `at` on: (the fast sum, the lanes that may round otherwise
  /// than `ideal`: bit i of an i32 for lane i).
  std::pair<Value, Value> finish(Value x, Value y, Value d, Value rows,
                                 Value at);

private:
  Value code(int64_t value) {
    return codes.constant(b.getIntegerAttr(codeType, value));
  }
  Value i64(int64_t value) { return wide.constant(b.getI64IntegerAttr(value)); }
  Value f64(double value) { return wide.constant(b.getF64FloatAttr(value)); }
  Value cmp(arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, loc, predicate, lhs, rhs);
  }
  Value select(Value condition, Value ifTrue, Value ifFalse) {
    return arith::SelectOp::create(b, loc, condition, ifTrue, ifFalse);
  }
  Value bitcast(Type element, Value value) {
    return arith::BitcastOp::create(b, loc, VectorType::get({lanes}, element),
                                    value);
  }
  /// double(v) for 0 ≤ v < 2^51, exactly.
  Value toDouble(Value v);
  /// (the table row, the offset v − the segment's midpoint as f64) of
  /// v ∈ [1, 2^octaves) (v + 1 of an addition).
  std::pair<Value, Value> locateSegment(Value v, Value oppositeBit);
  /// The four coefficient vectors of the lanes' segments, whose rows are
  /// stored in `rows` from `at` on.
  SmallVector<Value, 4> loadCoefficients(Value rows, Value at);

  OpBuilder &b;
  Location loc;
  IntegerType codeType;
  int64_t lanes;
  CodeBuilder codes, wide;
  const PiecewiseSbdb &segments;
  Value table;
};
} // namespace

Value PiecewiseAdder::toDouble(Value v) {
  Type f64Type = b.getF64Type();
  if (codeType.getWidth() < 64)
    return arith::SIToFPOp::create(b, loc, VectorType::get({lanes}, f64Type),
                                   v);
  // AVX2 has no i64 → f64 conversion: add the bits of 1.5·2^52 instead.
  Value shifted =
      arith::AddIOp::create(b, loc, v, i64(llvm::bit_cast<int64_t>(kMagic)));
  return arith::SubFOp::create(b, loc, bitcast(f64Type, shifted), f64(kMagic));
}

std::pair<Value, Value> PiecewiseAdder::locateSegment(Value v,
                                                      Value oppositeBit) {
  // Segment = (exponent, top kSbdbSegmentBits mantissa bits) of v as a
  // float − those of 1.0; the midpoint is the segment's start with the next
  // mantissa bit set. i32 lanes take float(v), one conversion for eight
  // lanes: where it rounds v up into the next segment (at most to
  // 2^octaves, the table's guard octave), v lies below that segment by less
  // than 2^-14 of its half-width, which the cubics' fit interval covers.
  // i64 lanes take the exact double.
  Type floatType = b.getF64Type(), bitsType = b.getI64Type();
  int mantissa = 52, bias = 1023;
  Value scaled;
  if (codeType.getWidth() < 64) {
    floatType = b.getF32Type();
    bitsType = codeType;
    mantissa = 23;
    bias = 127;
    scaled =
        arith::SIToFPOp::create(b, loc, VectorType::get({lanes}, floatType), v);
  } else {
    scaled = toDouble(v);
  }
  CodeBuilder ints(b, loc, cast<IntegerType>(bitsType), lanes);
  auto constant = [&](int64_t value) {
    return ints.constant(b.getIntegerAttr(bitsType, value));
  };
  Value bits = bitcast(bitsType, scaled);
  int shift = mantissa - kSbdbSegmentBits;
  Value opposite = oppositeBit;
  if (bitsType != codeType)
    opposite = arith::ExtUIOp::create(
        b, loc, VectorType::get({lanes}, bitsType), oppositeBit);
  // Both signs' rows of a segment share a 64-byte line: 2·segment + sign,
  // with the segment's bits taken one place higher and the low one cleared.
  Value segmentTwice = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, constant(shift - 1)),
      constant(~int64_t(1)));
  Value row = arith::AddIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, segmentTwice,
                            constant(int64_t(bias) << (kSbdbSegmentBits + 1))),
      opposite);
  Value center = bitcast(
      floatType, arith::OrIOp::create(
                     b, loc,
                     arith::AndIOp::create(
                         b, loc, bits, constant(~((int64_t(1) << shift) - 1))),
                     constant(int64_t(1) << (shift - 1))));
  if (floatType != b.getF64Type())
    center = arith::ExtFOp::create(
        b, loc, VectorType::get({lanes}, b.getF64Type()), center);
  Value exact = floatType == b.getF64Type() ? scaled : toDouble(v);
  return {row, arith::SubFOp::create(b, loc, exact, center)};
}

SmallVector<Value, 4> PiecewiseAdder::loadCoefficients(Value rowsBuffer,
                                                       Value at) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto shuffle = [&](Value v1, Value v2, ArrayRef<int64_t> mask) -> Value {
    return vector::ShuffleOp::create(b, loc, v1, v2, mask);
  };
  // Per group of four lanes a, b, c, d: the halves (c0, c1) and (c2, c3)
  // of rows a and c side by side in one register, likewise b and d; one
  // interleave then gives [a_i, b_i, c_i, d_i] (AVX2: 128-bit loads into
  // halves, vunpck{l,h}pd).
  auto halfType = VectorType::get({2}, b.getF64Type());
  Value two = arith::ConstantIndexOp::create(b, loc, 2);
  // The row numbers come from memory: scalar loads instead of vector lane
  // extractions, which compete with the table loads for the same AVX2
  // ports.
  SmallVector<SmallVector<Value, 4>> groups;
  for (int64_t first = 0; first < lanes; first += 4) {
    SmallVector<Value, 4> rows;
    for (int64_t lane = first; lane < first + 4; ++lane)
      rows.push_back(arith::IndexCastUIOp::create(
          b, loc, b.getIndexType(),
          memref::LoadOp::create(
              b, loc, rowsBuffer,
              ValueRange{arith::AddIOp::create(
                  b, loc, at, arith::ConstantIndexOp::create(b, loc, lane))})));
    auto pair = [&](Value rowLow, Value rowHigh, Value column) {
      Value low = vector::LoadOp::create(b, loc, halfType, table,
                                         ValueRange{rowLow, column});
      Value high = vector::LoadOp::create(b, loc, halfType, table,
                                          ValueRange{rowHigh, column});
      return shuffle(low, high, {0, 1, 2, 3});
    };
    Value ac01 = pair(rows[0], rows[2], zero),
          bd01 = pair(rows[1], rows[3], zero);
    Value ac23 = pair(rows[0], rows[2], two),
          bd23 = pair(rows[1], rows[3], two);
    groups.push_back(
        {shuffle(ac01, bd01, {0, 4, 2, 6}), shuffle(ac01, bd01, {1, 5, 3, 7}),
         shuffle(ac23, bd23, {0, 4, 2, 6}), shuffle(ac23, bd23, {1, 5, 3, 7})});
  }
  if (groups.size() == 1)
    return groups.front();
  SmallVector<Value, 4> coefficients;
  for (int i = 0; i < 4; ++i)
    coefficients.push_back(
        shuffle(groups[0][i], groups[1][i], {0, 1, 2, 3, 4, 5, 6, 7}));
  return coefficients;
}

std::pair<Value, Value> PiecewiseAdder::locate(Value x, Value y) {
  // v = |(x >> 1) − (y >> 1)| = −z; opposite signs as 0/1.
  Value difference =
      arith::SubIOp::create(b, loc, arith::ShRSIOp::create(b, loc, x, code(1)),
                            arith::ShRSIOp::create(b, loc, y, code(1)));
  Value v = arith::MaxSIOp::create(
      b, loc, difference, arith::SubIOp::create(b, loc, code(0), difference));
  Value oppositeBit = arith::AndIOp::create(
      b, loc, arith::XOrIOp::create(b, loc, x, y), code(1));
  // The segment of v + 1 ∈ [1, 2^octaves) (larger v take the last
  // segment's 0). Exponents lie within ±2^62 (±2^30 for i32 codes): the
  // difference does not overflow and v ≥ 0.
  int64_t end = int64_t(1) << segments.octaves;
  Value clamped = arith::AddIOp::create(
      b, loc, arith::MinSIOp::create(b, loc, v, code(end - 2)), code(1));
  return locateSegment(clamped, oppositeBit);
}

std::pair<Value, Value> PiecewiseAdder::finish(Value x, Value y, Value d,
                                               Value rows, Value at) {
  using Predicate = arith::CmpIPredicate;
  Type f64Type = b.getF64Type(), i64Type = b.getI64Type();
  SmallVector<Value, 4> c = loadCoefficients(rows, at);
  // Estrin's scheme: (c0 + c1·d) + d²·(c2 + c3·d), two FMAs shorter than
  // Horner's on the critical path (its roundings are within the bound's
  // 8·2^-53·Σ|c_i|·h^i).
  Value low = math::FmaOp::create(b, loc, c[1], d, c[0]);
  Value high = math::FmaOp::create(b, loc, c[3], d, c[2]);
  Value q = math::FmaOp::create(b, loc, high,
                                arith::MulFOp::create(b, loc, d, d), low);

  // roundHalfEven(q) through 1.5·2^52 (|q| < 2^51), and whether q lies
  // within 2·bound of a .5 tie (NaN compares unordered: flagged). Lanes
  // whose sum takes no sbdb (zero operands, cancellations) are flagged as
  // rarely as any other, and then recomputed exactly like them.
  Value shifted = arith::AddFOp::create(b, loc, q, f64(kMagic));
  Value integer = arith::SubIOp::create(b, loc, bitcast(i64Type, shifted),
                                        i64(llvm::bit_cast<int64_t>(kMagic)));
  if (codeType.getWidth() < 64)
    integer = arith::TruncIOp::create(
        b, loc, VectorType::get({lanes}, codeType), integer);
  Value nearest = arith::SubFOp::create(b, loc, shifted, f64(kMagic));
  Value fromNearest =
      math::AbsFOp::create(b, loc, arith::SubFOp::create(b, loc, q, nearest));
  // Compared per register of four lanes, each giving four mask bits (no
  // mask packing across registers).
  Type i32 = b.getI32Type();
  Value undecided = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  for (int64_t first = 0; first < lanes; first += 4) {
    Value part = fromNearest;
    if (lanes > 4)
      part = vector::ShuffleOp::create(
          b, loc, fromNearest, fromNearest,
          ArrayRef<int64_t>{first, first + 1, first + 2, first + 3});
    Value limit = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({4}, f64Type),
                               b.getF64FloatAttr(0.5 - 2 * segments.bound)));
    Value nearTie =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGE, part, limit);
    Value bits = vector::ExtractOp::create(
        b, loc,
        vector::BitCastOp::create(
            b, loc, VectorType::get({1}, b.getIntegerType(4)), nearTie),
        0);
    Value shifted = arith::ShLIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i32, bits),
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(first)));
    undecided = arith::OrIOp::create(b, loc, undecided, shifted);
  }

  Value sbdb = arith::ShLIOp::create(b, loc, integer, code(1));
  if (codeType.getWidth() == 64)
    return {codes.combine(x, y, sbdb), undecided};
  // Narrow codes: a zero y (exponent −2^30) is 2^28 or more below every
  // other code's exponent, past every segment: sbdb is 0 and max picks x.
  // Only a zero x (both zero included) and cancellations need a rule.
  Value sum =
      arith::AddIOp::create(b, loc, arith::MaxSIOp::create(b, loc, x, y), sbdb);
  Value cancels = cmp(Predicate::eq, codes.neg(x), y);
  sum = select(cancels, code(kNarrowZero), sum);
  return {select(codes.isZero(x), y, sum), undecided};
}

namespace {
/// The loops of one kernel: every step of a row adds a vector of terms to
/// the row's accumulators.
class RowSweeps {
public:
  RowSweeps(const PiecewiseSbdb &segments, NumType type, IntegerType codeType,
            int64_t paddedN, Value table, Value acc, Value saved, Value pending,
            Value pendingLanes, Value terms, Value rows, Value offsets)
      : segments(segments), type(type), codeType(codeType),
        lanes(lanesOf(codeType)), paddedN(paddedN), table(table), acc(acc),
        saved(saved), pending(pending), pendingLanes(pendingLanes),
        terms(terms), rows(rows), offsets(offsets) {}

  using TermFn = function_ref<Value(OpBuilder &, Location, Value)>;
  /// acc[row, :] = add(acc[row, :], term(:)), term(n) the vector of terms
  /// of outputs n..n+lanes. The hot loop writes the fast sums and, for
  /// vectors with undecided lanes, appends their position to `pending`,
  /// the lanes to `pendingLanes` and their previous sums to `saved`; it
  /// calls nothing (a libm call there would make every vector register
  /// caller-saved across the loop). The undecided lanes are then
  /// recomputed from `saved` with the exact formula.
  void build(OpBuilder &b, Location loc, Value row, TermFn term) const;

private:
  VectorType vectorType() const { return VectorType::get({lanes}, codeType); }

  const PiecewiseSbdb &segments;
  NumType type;
  IntegerType codeType;
  int64_t lanes, paddedN;
  Value table, acc, saved, pending, pendingLanes, terms, rows, offsets;
};
} // namespace

void RowSweeps::build(OpBuilder &b, Location loc, Value row,
                      TermFn term) const {
  // Pass 1: terms, table rows and offsets of the whole row. Pass 2 starts
  // each vector with its table loads: no dependency chain before them, so
  // that consecutive vectors overlap.
  scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, paddedN), index(b, loc, lanes),
      ValueRange{}, [&](OpBuilder &nb, Location nl, Value at, ValueRange) {
        Value previous = vector::LoadOp::create(nb, nl, vectorType(), acc,
                                                ValueRange{row, at});
        Value t = term(nb, nl, at);
        auto [rowNumbers, d] = PiecewiseAdder(nb, nl, codeType, segments, table)
                                   .locate(previous, t);
        vector::StoreOp::create(nb, nl, t, terms, ValueRange{at});
        vector::StoreOp::create(nb, nl, rowNumbers, rows, ValueRange{at});
        vector::StoreOp::create(nb, nl, d, offsets, ValueRange{at});
        scf::YieldOp::create(nb, nl);
      });
  Value noLane = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  auto fast = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, paddedN), index(b, loc, lanes),
      ValueRange{index(b, loc, 0)},
      [&](OpBuilder &nb, Location nl, Value at, ValueRange carried) {
        Value count = carried[0];
        Value previous = vector::LoadOp::create(nb, nl, vectorType(), acc,
                                                ValueRange{row, at});
        Value t =
            vector::LoadOp::create(nb, nl, vectorType(), terms, ValueRange{at});
        Value d = vector::LoadOp::create(
            nb, nl, VectorType::get({lanes}, nb.getF64Type()), offsets,
            ValueRange{at});
        std::pair<Value, Value> added =
            PiecewiseAdder(nb, nl, codeType, segments, table)
                .finish(previous, t, d, rows, at);
        Value sum = added.first, undecided = added.second;
        vector::StoreOp::create(nb, nl, sum, acc, ValueRange{row, at});
        Value any = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne,
                                          undecided, noLane);
        auto append = scf::IfOp::create(
            nb, nl, any,
            [&](OpBuilder &tb, Location tl) {
              Value slot =
                  arith::MulIOp::create(tb, tl, count, index(tb, tl, lanes));
              vector::StoreOp::create(tb, tl, previous, saved,
                                      ValueRange{slot});
              memref::StoreOp::create(tb, tl, at, pending, ValueRange{count});
              memref::StoreOp::create(tb, tl, undecided, pendingLanes,
                                      ValueRange{count});
              scf::YieldOp::create(tb, tl,
                                   ValueRange{arith::AddIOp::create(
                                       tb, tl, count, index(tb, tl, 1))});
            },
            [&](OpBuilder &eb, Location el) {
              scf::YieldOp::create(eb, el, ValueRange{count});
            });
        scf::YieldOp::create(nb, nl, append.getResults());
      });
  // The undecided lanes of pending vectors, one by one with the exact
  // formula (the others keep their fast sums).
  scf::ForOp::create(
      b, loc, index(b, loc, 0), fast.getResult(0), index(b, loc, 1),
      ValueRange{}, [&](OpBuilder &nb, Location nl, Value i, ValueRange) {
        Value at = memref::LoadOp::create(nb, nl, pending, ValueRange{i});
        Value mask =
            memref::LoadOp::create(nb, nl, pendingLanes, ValueRange{i});
        Value slot = arith::MulIOp::create(nb, nl, i, index(nb, nl, lanes));
        Value laneTerms =
            vector::LoadOp::create(nb, nl, vectorType(), terms, ValueRange{at});
        scf::ForOp::create(
            nb, nl, index(nb, nl, 0), index(nb, nl, lanes), index(nb, nl, 1),
            ValueRange{},
            [&](OpBuilder &lb, Location ll, Value lane, ValueRange) {
              Value bit = arith::AndIOp::create(
                  lb, ll,
                  arith::ShRUIOp::create(lb, ll, mask,
                                         arith::IndexCastUIOp::create(
                                             lb, ll, lb.getI32Type(), lane)),
                  arith::ConstantOp::create(lb, ll, lb.getI32IntegerAttr(1)));
              Value undecided = arith::CmpIOp::create(
                  lb, ll, arith::CmpIPredicate::ne, bit,
                  arith::ConstantOp::create(lb, ll, lb.getI32IntegerAttr(0)));
              scf::IfOp::create(
                  lb, ll, undecided, [&](OpBuilder &tb, Location tl) {
                    Value previous = memref::LoadOp::create(
                        tb, tl, saved,
                        ValueRange{arith::AddIOp::create(tb, tl, slot, lane)});
                    Value t = vector::ExtractOp::create(
                        tb, tl, laneTerms, ArrayRef<OpFoldResult>{lane});
                    Value sum =
                        CodeBuilder(tb, tl, codeType).add(previous, t, type);
                    memref::StoreOp::create(
                        tb, tl, sum, acc,
                        ValueRange{row,
                                   arith::AddIOp::create(tb, tl, at, lane)});
                    scf::YieldOp::create(tb, tl);
                  });
              scf::YieldOp::create(lb, ll);
            });
        scf::YieldOp::create(nb, nl);
      });
}

Value lns::buildLinearPiecewise(OpBuilder &b, Location loc, Value inputByK,
                                Value weightByK, Value bias, NumType type,
                                const PiecewiseSbdb &segments) {
  auto byK = cast<RankedTensorType>(inputByK.getType());
  auto codeType = cast<IntegerType>(byK.getElementType());
  int64_t k = byK.getDimSize(0), m = byK.getDimSize(1);
  int64_t n = cast<RankedTensorType>(weightByK.getType()).getDimSize(1);
  int64_t lanes = lanesOf(codeType);
  int64_t paddedN = llvm::alignTo(n, lanes);
  CodeBuilder scalarCodes(b, loc, codeType);
  Value zeroCode = scalarCodes.constantCode(lns::codes::kZero);
  Value weights = padColumns(b, loc, weightByK, paddedN, zeroCode);
  Value paddedBias =
      bias ? padColumns(b, loc, bias, paddedN, zeroCode) : Value();

  // The coefficients, a global constant: rows are loaded from its buffer.
  auto tableType = MemRefType::get(
      {static_cast<int64_t>(segments.coefficients.size() / 4), 4},
      b.getF64Type());
  Value table = bufferization::ToBufferOp::create(
      b, loc, tableType,
      arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(
              RankedTensorType::get(tableType.getShape(), b.getF64Type()),
              ArrayRef<double>(segments.coefficients))),
      /*readOnly=*/true);
  auto vectorType = VectorType::get({lanes}, codeType);
  Value acc =
      memref::AllocOp::create(b, loc, MemRefType::get({m, paddedN}, codeType));
  Value saved =
      memref::AllocOp::create(b, loc, MemRefType::get({paddedN}, codeType));
  Value pending = memref::AllocOp::create(
      b, loc, MemRefType::get({paddedN / lanes}, b.getIndexType()));
  // One row's terms, table rows (of the code type) and offsets.
  Value rows =
      memref::AllocOp::create(b, loc, MemRefType::get({paddedN}, codeType));
  Value terms =
      memref::AllocOp::create(b, loc, MemRefType::get({paddedN}, codeType));
  Value segmentOffsets = memref::AllocOp::create(
      b, loc, MemRefType::get({paddedN}, b.getF64Type()));
  Value pendingLanes = memref::AllocOp::create(
      b, loc, MemRefType::get({paddedN / lanes}, b.getI32Type()));
  RowSweeps sweeps(segments, type, codeType, paddedN, table, acc, saved,
                   pending, pendingLanes, terms, rows, segmentOffsets);
  Value zeroCodes = vector::BroadcastOp::create(b, loc, vectorType, zeroCode);

  // Rows in blocks: each step's weight row is read once per block (from
  // L1 after the first row) instead of once per row.
  int64_t block = m % 4 == 0 ? 4 : (m % 2 == 0 ? 2 : 1);
  auto overBlock = [&](OpBuilder &ob, Location ol, Value first,
                       function_ref<void(OpBuilder &, Location, Value)> body) {
    scf::ForOp::create(
        ob, ol, first,
        arith::AddIOp::create(ob, ol, first, index(ob, ol, block)),
        index(ob, ol, 1), ValueRange{},
        [&](OpBuilder &ib, Location il, Value row, ValueRange) {
          body(ib, il, row);
          scf::YieldOp::create(ib, il);
        });
  };
  scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, m), index(b, loc, block),
      ValueRange{}, [&](OpBuilder &rb, Location rl, Value first, ValueRange) {
        overBlock(rb, rl, first, [&](OpBuilder &ib, Location il, Value row) {
          scf::ForOp::create(
              ib, il, index(ib, il, 0), index(ib, il, paddedN),
              index(ib, il, lanes), ValueRange{},
              [&](OpBuilder &nb, Location nl, Value at, ValueRange) {
                vector::StoreOp::create(nb, nl, zeroCodes, acc,
                                        ValueRange{row, at});
                scf::YieldOp::create(nb, nl);
              });
        });
        // Each row's terms in order, k = 0..K−1, then the bias once.
        scf::ForOp::create(
            rb, rl, index(rb, rl, 0), index(rb, rl, k), index(rb, rl, 1),
            ValueRange{},
            [&](OpBuilder &kb, Location kl, Value kk, ValueRange) {
              overBlock(
                  kb, kl, first, [&](OpBuilder &ib, Location il, Value row) {
                    Value input = tensor::ExtractOp::create(
                        ib, il, inputByK, ValueRange{kk, row});
                    Value inputs =
                        vector::BroadcastOp::create(ib, il, vectorType, input);
                    sweeps.build(
                        ib, il, row, [&](OpBuilder &tb, Location tl, Value at) {
                          Value w = vector::TransferReadOp::create(
                              tb, tl, vectorType, weights, ValueRange{kk, at},
                              /*padding=*/std::nullopt, ArrayRef<bool>{true});
                          return CodeBuilder(tb, tl, codeType, lanes)
                              .mul(inputs, w);
                        });
                  });
              scf::YieldOp::create(kb, kl);
            });
        if (paddedBias)
          overBlock(rb, rl, first, [&](OpBuilder &ib, Location il, Value row) {
            sweeps.build(
                ib, il, row, [&](OpBuilder &tb, Location tl, Value at) {
                  return vector::TransferReadOp::create(
                             tb, tl, vectorType, paddedBias, ValueRange{at},
                             /*padding=*/std::nullopt, ArrayRef<bool>{true})
                      .getResult();
                });
          });
        scf::YieldOp::create(rb, rl);
      });
  return unpadAccumulators(b, loc, acc, m, n);
}
