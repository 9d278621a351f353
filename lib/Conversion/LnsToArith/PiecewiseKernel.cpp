//===- PiecewiseKernel.cpp - LNS linear layers on piecewise-cubic sbdb ----===//
//
// `ideal` x[M, K]·W[N, K]ᵀ (+ b) as explicit vector code: for each row m,
// the accumulators of its N outputs take the terms k = 0..K−1 in order, a
// vector of outputs at a time (4 lanes of i64 codes, or 8 of i32 codes
// when every code is small). sbdb comes from the piecewise cubics of
// PiecewiseSbdb.cpp: each lane loads its segment's four coefficients (one
// 32-byte row), 4×4 transposes turn the rows into coefficient vectors, and
// three FMAs evaluate them. Vectors with a lane whose rounding the bound
// cannot decide are recomputed with the exact formula after each sweep of
// the row, so every sum is the `ideal` one bit for bit.
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

  /// (the fast sum, whether some lane may round otherwise than `ideal`).
  std::pair<Value, Value> add(Value x, Value y);

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
  Value negate(Value condition) {
    return arith::XOrIOp::create(b, loc, condition,
                                 codes.constant(b.getBoolAttr(true)));
  }
  /// double(v) for 0 ≤ v < 2^51, exactly.
  Value toDouble(Value v);
  /// The four coefficient vectors of the lanes' segments.
  SmallVector<Value, 4> loadCoefficients(Value segment);

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
  Value shifted = arith::AddIOp::create(
      b, loc, v, i64(llvm::bit_cast<int64_t>(kMagic)));
  return arith::SubFOp::create(b, loc, bitcast(f64Type, shifted),
                               f64(kMagic));
}

SmallVector<Value, 4> PiecewiseAdder::loadCoefficients(Value segment) {
  auto rowType = VectorType::get({4}, b.getF64Type());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto shuffle = [&](Value v1, Value v2, ArrayRef<int64_t> mask) -> Value {
    return vector::ShuffleOp::create(b, loc, v1, v2, mask);
  };
  // Per group of four lanes: four rows, then a 4×4 transpose (interleave
  // pairs of rows, then swap 128-bit halves).
  SmallVector<SmallVector<Value, 4>> groups;
  for (int64_t first = 0; first < lanes; first += 4) {
    SmallVector<Value, 4> rows;
    for (int64_t lane = first; lane < first + 4; ++lane) {
      Value row = arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          vector::ExtractOp::create(b, loc, segment, lane));
      rows.push_back(vector::LoadOp::create(b, loc, rowType, table,
                                            ValueRange{row, zero}));
    }
    Value low01 = shuffle(rows[0], rows[1], {0, 4, 2, 6});
    Value high01 = shuffle(rows[0], rows[1], {1, 5, 3, 7});
    Value low23 = shuffle(rows[2], rows[3], {0, 4, 2, 6});
    Value high23 = shuffle(rows[2], rows[3], {1, 5, 3, 7});
    groups.push_back({shuffle(low01, low23, {0, 1, 4, 5}),
                      shuffle(high01, high23, {0, 1, 4, 5}),
                      shuffle(low01, low23, {2, 3, 6, 7}),
                      shuffle(high01, high23, {2, 3, 6, 7})});
  }
  if (groups.size() == 1)
    return groups.front();
  SmallVector<Value, 4> coefficients;
  for (int i = 0; i < 4; ++i)
    coefficients.push_back(
        shuffle(groups[0][i], groups[1][i], {0, 1, 2, 3, 4, 5, 6, 7}));
  return coefficients;
}

std::pair<Value, Value> PiecewiseAdder::add(Value x, Value y) {
  using Predicate = arith::CmpIPredicate;
  Type f64Type = b.getF64Type(), i64Type = b.getI64Type();
  auto wideType = VectorType::get({lanes}, i64Type);
  // v = |(x >> 1) − (y >> 1)| = −z; opposite signs as 0/1.
  Value difference =
      arith::SubIOp::create(b, loc, arith::ShRSIOp::create(b, loc, x, code(1)),
                            arith::ShRSIOp::create(b, loc, y, code(1)));
  Value v = arith::MaxSIOp::create(
      b, loc, difference, arith::SubIOp::create(b, loc, code(0), difference));
  Value oppositeBit = arith::AndIOp::create(
      b, loc, arith::XOrIOp::create(b, loc, x, y), code(1));
  Value opposite = cmp(Predicate::ne, oppositeBit, code(0));
  int64_t end = int64_t(1) << segments.octaves;
  Value inTable = cmp(Predicate::slt, v, code(end));
  Value atZero = cmp(Predicate::eq, v, code(0));

  // The segment: exponent and top mantissa bits of double(v), v ∈ [1, end).
  Value clamped = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, v, code(1)), code(end - 1));
  Value vf = toDouble(clamped);
  Value bits = bitcast(i64Type, vf);
  int shift = 52 - kSbdbSegmentBits;
  int64_t perSign = segments.octaves << kSbdbSegmentBits;
  Value oppositeWide = oppositeBit;
  if (codeType.getWidth() < 64)
    oppositeWide = arith::ExtUIOp::create(b, loc, wideType, oppositeBit);
  Value segment = arith::AddIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc,
                            arith::ShRUIOp::create(b, loc, bits, i64(shift)),
                            i64(int64_t(1023) << kSbdbSegmentBits)),
      arith::MulIOp::create(b, loc, oppositeWide, i64(perSign)));
  // The segment's midpoint: its start's bits with the next bit set.
  Value center = bitcast(
      f64Type,
      arith::OrIOp::create(
          b, loc,
          arith::AndIOp::create(b, loc, bits,
                                i64(~((int64_t(1) << shift) - 1))),
          i64(int64_t(1) << (shift - 1))));
  Value d = arith::SubFOp::create(b, loc, vf, center);
  SmallVector<Value, 4> c = loadCoefficients(segment);
  Value q = c[3];
  for (int i = 2; i >= 0; --i)
    q = math::FmaOp::create(b, loc, q, d, c[i]);

  // roundHalfEven(q) through 1.5·2^52 (|q| < 2^51), and whether q lies
  // within 2·bound of a .5 tie (NaN compares unordered: flagged).
  Value shifted = arith::AddFOp::create(b, loc, q, f64(kMagic));
  Value integer = arith::SubIOp::create(
      b, loc, bitcast(i64Type, shifted), i64(llvm::bit_cast<int64_t>(kMagic)));
  if (codeType.getWidth() < 64)
    integer = arith::TruncIOp::create(
        b, loc, VectorType::get({lanes}, codeType), integer);
  Value nearest = arith::SubFOp::create(b, loc, shifted, f64(kMagic));
  Value fromNearest = math::AbsFOp::create(
      b, loc, arith::SubFOp::create(b, loc, q, nearest));
  Value nearTie =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGE, fromNearest,
                            f64(0.5 - 2 * segments.bound));
  Value cancelling = arith::AndIOp::create(
      b, loc, opposite,
      cmp(Predicate::slt, v, code(segments.nearCancellation)));
  nearTie = arith::OrIOp::create(b, loc, nearTie, cancelling);
  Value decided = arith::OrIOp::create(
      b, loc, codes.isExactSum(x, y),
      arith::OrIOp::create(b, loc, atZero, negate(inTable)));
  nearTie = arith::AndIOp::create(b, loc, nearTie, negate(decided));

  Value sbdb = arith::ShLIOp::create(b, loc, integer, code(1));
  sbdb = select(atZero, code(segments.sbdbAtZero), sbdb);
  sbdb = select(inTable, sbdb, code(0));
  return {codes.combine(x, y, sbdb), nearTie};
}

namespace {
/// The loops of one kernel: every step of a row adds a vector of terms to
/// the row's accumulators.
class RowSweeps {
public:
  RowSweeps(const PiecewiseSbdb &segments, NumType type, IntegerType codeType,
            int64_t paddedN, Value table, Value acc, Value saved, Value flags)
      : segments(segments), type(type), codeType(codeType),
        lanes(lanesOf(codeType)), paddedN(paddedN), table(table), acc(acc),
        saved(saved), flags(flags) {}

  using TermFn = function_ref<Value(OpBuilder &, Location, Value)>;
  /// acc[row, :] = add(acc[row, :], term(:)), term(n) the vector of terms
  /// of outputs n..n+lanes. The hot loop writes the fast sums, a flag
  /// byte per vector and, for flagged vectors, their previous sums into
  /// `saved`; it calls nothing (a libm call there would make every vector
  /// register caller-saved across the loop). Flagged vectors are then
  /// recomputed from `saved` with the exact formula.
  void build(OpBuilder &b, Location loc, Value row, TermFn term) const;

private:
  Value vectorIndex(OpBuilder &b, Location loc, Value at) const {
    return arith::DivUIOp::create(b, loc, at, index(b, loc, lanes));
  }
  VectorType vectorType() const { return VectorType::get({lanes}, codeType); }

  const PiecewiseSbdb &segments;
  NumType type;
  IntegerType codeType;
  int64_t lanes, paddedN;
  Value table, acc, saved, flags;
};
} // namespace

void RowSweeps::build(OpBuilder &b, Location loc, Value row,
                      TermFn term) const {
  Type i8 = b.getI8Type();
  auto fast = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, paddedN),
      index(b, loc, lanes), ValueRange{arith::ConstantOp::create(
                                b, loc, b.getBoolAttr(false))},
      [&](OpBuilder &nb, Location nl, Value at, ValueRange carried) {
        Value previous = vector::LoadOp::create(nb, nl, vectorType(), acc,
                                                ValueRange{row, at});
        PiecewiseAdder adder(nb, nl, codeType, segments, table);
        auto [sum, nearTie] = adder.add(previous, term(nb, nl, at));
        vector::StoreOp::create(nb, nl, sum, acc, ValueRange{row, at});
        Value undecided = vector::ReductionOp::create(
            nb, nl, vector::CombiningKind::OR, nearTie);
        scf::IfOp::create(nb, nl, undecided, [&](OpBuilder &tb, Location tl) {
          vector::StoreOp::create(tb, tl, previous, saved, ValueRange{at});
          scf::YieldOp::create(tb, tl);
        });
        memref::StoreOp::create(nb, nl,
                                arith::ExtUIOp::create(nb, nl, i8, undecided),
                                flags, ValueRange{vectorIndex(nb, nl, at)});
        scf::YieldOp::create(
            nb, nl,
            ValueRange{arith::OrIOp::create(nb, nl, carried[0], undecided)});
      });
  scf::IfOp::create(b, loc, fast.getResult(0), [&](OpBuilder &ib, Location il) {
    scf::ForOp::create(
        ib, il, index(ib, il, 0), index(ib, il, paddedN), index(ib, il, lanes),
        ValueRange{},
        [&](OpBuilder &nb, Location nl, Value at, ValueRange) {
          Value flag = memref::LoadOp::create(
              nb, nl, flags, ValueRange{vectorIndex(nb, nl, at)});
          Value flagged = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::ne, flag,
              arith::ConstantOp::create(nb, nl, nb.getI8IntegerAttr(0)));
          scf::IfOp::create(nb, nl, flagged, [&](OpBuilder &tb, Location tl) {
            Value previous = vector::LoadOp::create(tb, tl, vectorType(),
                                                    saved, ValueRange{at});
            CodeBuilder codes(tb, tl, codeType, lanes);
            Value sum = codes.add(previous, term(tb, tl, at), type);
            vector::StoreOp::create(tb, tl, sum, acc, ValueRange{row, at});
            scf::YieldOp::create(tb, tl);
          });
          scf::YieldOp::create(nb, nl);
        });
    scf::YieldOp::create(ib, il);
  });
}

/// `values` [rows, n] (or [n]) padded with `zero` to `paddedN` columns.
static Value padColumns(OpBuilder &b, Location loc, Value values,
                        int64_t paddedN, Value zero) {
  auto type = cast<RankedTensorType>(values.getType());
  int64_t rank = type.getRank();
  int64_t n = type.getDimSize(rank - 1);
  if (n == paddedN)
    return values;
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = paddedN;
  SmallVector<OpFoldResult> low(rank, b.getIndexAttr(0));
  SmallVector<OpFoldResult> high(rank, b.getIndexAttr(0));
  high.back() = b.getIndexAttr(paddedN - n);
  return tensor::PadOp::create(b, loc, type.clone(shape), values, low, high,
                               zero);
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
  Value acc = memref::AllocOp::create(
      b, loc, MemRefType::get({m, paddedN}, codeType));
  Value saved =
      memref::AllocOp::create(b, loc, MemRefType::get({paddedN}, codeType));
  Value flags = memref::AllocOp::create(
      b, loc, MemRefType::get({paddedN / lanes}, b.getI8Type()));
  RowSweeps sweeps(segments, type, codeType, paddedN, table, acc, saved,
                   flags);
  Value zeroCodes = vector::BroadcastOp::create(b, loc, vectorType, zeroCode);

  scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, m), index(b, loc, 1),
      ValueRange{},
      [&](OpBuilder &rb, Location rl, Value row, ValueRange) {
        scf::ForOp::create(
            rb, rl, index(rb, rl, 0), index(rb, rl, paddedN),
            index(rb, rl, lanes), ValueRange{},
            [&](OpBuilder &nb, Location nl, Value at, ValueRange) {
              vector::StoreOp::create(nb, nl, zeroCodes, acc,
                                      ValueRange{row, at});
              scf::YieldOp::create(nb, nl);
            });
        // The terms in order, k = 0..K−1, then the bias once.
        scf::ForOp::create(
            rb, rl, index(rb, rl, 0), index(rb, rl, k), index(rb, rl, 1),
            ValueRange{},
            [&](OpBuilder &kb, Location kl, Value kk, ValueRange) {
              Value input = tensor::ExtractOp::create(kb, kl, inputByK,
                                                      ValueRange{kk, row});
              Value inputs =
                  vector::BroadcastOp::create(kb, kl, vectorType, input);
              sweeps.build(
                  kb, kl, row, [&](OpBuilder &tb, Location tl, Value at) {
                    Value w = vector::TransferReadOp::create(
                        tb, tl, vectorType, weights, ValueRange{kk, at},
                        /*padding=*/std::nullopt, ArrayRef<bool>{true});
                    return CodeBuilder(tb, tl, codeType, lanes).mul(inputs, w);
                  });
              scf::YieldOp::create(kb, kl);
            });
        if (paddedBias)
          sweeps.build(rb, rl, row, [&](OpBuilder &tb, Location tl, Value at) {
            return vector::TransferReadOp::create(
                       tb, tl, vectorType, paddedBias, ValueRange{at},
                       /*padding=*/std::nullopt, ArrayRef<bool>{true})
                .getResult();
          });
        scf::YieldOp::create(rb, rl);
      });
  Value result = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get({m, paddedN}, codeType), acc,
      /*restrict=*/true, /*writable=*/true);
  if (paddedN == n)
    return result;
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(m), b.getIndexAttr(n)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({m, n}, codeType), result, offsets, sizes,
      strides);
}
