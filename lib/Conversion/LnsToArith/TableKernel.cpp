//===- TableKernel.cpp - LNS linear layers on sbdb tables, register tiles -===//
//
// `table` x[M, K]·W[N, K]ᵀ (+ b) as explicit vector code. An output tile of
// kRows rows × kVectors vectors of lanes stays in registers while k runs
// from 0 to K−1 (then the bias), so that each output keeps its order of
// additions and the tile's kRows·kVectors addition chains are independent:
// one chain's table gather waits while the others compute. Each step reads
// a vector of W once for the tile's rows and broadcasts one code of x per
// row. x and W are packed into panels first, rows padded to whole tiles.
//
// On i32 codes below kSmall, the additions skip the zero and cancellation
// rules (ZeroRegionAdder): zero is a code far below every nonzero one, so
// that max() and the table's 0 past its end give the rules' results, and
// everything that ends below kZeroBelow is zero.
//
//===----------------------------------------------------------------------===//

#include "LinearKernels.h"

#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::lns;

namespace {
/// Rows and vectors of one register tile: 8 accumulators, with the weight
/// vectors and temporaries within 16 AVX2 registers' reach. (With AVX-512's
/// 512-bit vectors each gather fetches 16 i32 lanes instead of 8: 1.1x
/// faster at 512 × 1024 × 1024; more rows per tile did not help.)
constexpr int64_t kRows = 4;
constexpr int64_t kVectors = 2;

// The zero region, on i32 codes. Nonzero inputs lie within ±kSmall, so
// that nonzero products lie within ±2^27 and nonzero sums above
// −2^27 − 1 − S (S: the largest |sbdb| code; a near cancellation lands at
// most S below the larger operand, and a sum below every product cannot
// cancel again). Zero inputs become kZeroInput: a product with a zero
// factor lies below −0.75·2^28 + 1 and rises at most 2^(f+1) per addition.
// An exact cancellation adds kCancelled (the table's entry for z = 0 of
// opposite signs), which puts any sum below −1.5·2^28. Every value stays
// above −2^30 − S: no i32 overflow.
constexpr int64_t kSmall = int64_t(1) << 26;
constexpr int64_t kZeroInput = -(int64_t(1) << 28);
constexpr int64_t kZeroBelow = -5 * (int64_t(1) << 25);
constexpr int64_t kCancelled = -(int64_t(1) << 29);

/// The table of the zero region: entry 2i + s holds the sbdb *code* (twice
/// the value) of z = −i; entry 1 (x + (−x)) holds kCancelled; two zero
/// entries after the last row take every z past the table.
std::vector<int32_t> zeroRegionTable(const SbdbTables &tables) {
  std::vector<int32_t> table = tables.values;
  for (int32_t &entry : table)
    entry *= 2;
  table[1] = kCancelled;
  table.insert(table.end(), {0, 0});
  return table;
}

/// Whether the zero region holds for `type` and K terms (plus a bias):
/// zero sums stay below kZeroBelow, nonzero ones above it, and the two lie
/// further apart than the table reaches.
bool zeroRegionHolds(const SbdbTables &tables, int64_t k) {
  const std::vector<int32_t> &table = tables.values;
  int64_t largest = 0; // S
  for (size_t i = 2; i < table.size(); ++i)
    largest = std::max<int64_t>(largest, 2 * std::abs(int64_t(table[i])));
  int64_t rise = 2 * int64_t(table[0]); // 2^(f+1): the largest positive code
  if (k + 1 > (int64_t(1) << 30) / rise)
    return false;
  int64_t lowestNonzero = -(int64_t(1) << 27) - 1 - largest;
  int64_t highestZero = kZeroInput + kSmall + 1 + (k + 1) * rise;
  return lowestNonzero > kZeroBelow && highestZero < kZeroBelow &&
         (lowestNonzero - highestZero) / 2 > int64_t(table.size() / 2);
}

/// add(acc, p) on i32 codes of the zero region: max(acc, p) + the table's
/// code at 2·min(|e_acc − e_p|, size) + s.
class ZeroRegionAdder {
public:
  ZeroRegionAdder(OpBuilder &b, Location loc, int64_t lanes, Value table,
                  int64_t size)
      : b(b), loc(loc), lanes(lanes), table(table), size(size) {}

  Value operator()(Value acc, Value p) {
    Value one = splat(1);
    Value d =
        arith::SubIOp::create(b, loc, arith::ShRSIOp::create(b, loc, acc, one),
                              arith::ShRSIOp::create(b, loc, p, one));
    Value row = arith::MinSIOp::create(b, loc, math::AbsIOp::create(b, loc, d),
                                       splat(size));
    Value sign = arith::AndIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, acc, p), one);
    Value position = arith::OrIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, row, one), sign);
    auto type = VectorType::get({lanes}, b.getI32Type());
    Value sbdb = vector::GatherOp::create(
        b, loc, type, table,
        ValueRange{arith::ConstantIndexOp::create(b, loc, 0)}, position,
        arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(VectorType::get({lanes}, b.getI1Type()),
                                   true)),
        splat(0), IntegerAttr());
    return arith::AddIOp::create(b, loc, arith::MaxSIOp::create(b, loc, acc, p),
                                 sbdb);
  }

private:
  Value splat(int32_t value) {
    auto type = VectorType::get({lanes}, b.getI32Type());
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(type, value));
  }

  OpBuilder &b;
  Location loc;
  int64_t lanes;
  Value table;
  int64_t size;
};

/// The loops of one kernel over packed operands: panels of x [M/kRows, K,
/// kRows] and of W [N/width, K, width] (width = kVectors·lanes), so that
/// each tile's k loop reads both contiguously.
class TableTiles {
public:
  TableTiles(NumType type, const SbdbTables &tables, Value zeroTable,
             IntegerType codeType, int64_t lanes, Value inputPanels,
             Value weightPanels, Value bias, Value acc)
      : type(type), tables(tables), zeroTable(zeroTable), codeType(codeType),
        lanes(lanes), inputPanels(inputPanels),
        weightPanels(weightPanels), bias(bias), acc(acc) {}

  /// Every tile: column panels outer (a panel of W stays in cache while
  /// the rows pass), row panels inner.
  void build(OpBuilder &b, Location loc) const;

private:
  /// The tile of row panel `rowPanel` and column panel `columnPanel`.
  void buildTile(OpBuilder &b, Location loc, Value rowPanel,
                 Value columnPanel) const;
  VectorType vectorType() const { return VectorType::get({lanes}, codeType); }
  Value read(OpBuilder &b, Location loc, Value source,
             ValueRange indices) const {
    return vector::TransferReadOp::create(b, loc, vectorType(), source, indices,
                                          /*padding=*/std::nullopt,
                                          ArrayRef<bool>{true});
  }
  /// add(acc, term) in the kernel's arithmetic.
  Value add(OpBuilder &b, Location loc, Value acc, Value term) const {
    if (zeroTable)
      return ZeroRegionAdder(b, loc, lanes, zeroTable, tables.size)(acc, term);
    return CodeBuilder(b, loc, codeType, lanes).add(acc, term, type, &tables);
  }
  /// x·w; in the zero region without the zero rule ((x + w − s) ^ s).
  Value mul(OpBuilder &b, Location loc, Value x, Value w) const {
    CodeBuilder codes(b, loc, codeType, lanes);
    if (!zeroTable)
      return codes.mul(x, w);
    Value sign = arith::AndIOp::create(b, loc, w,
                                       codes.constant(b.getI32IntegerAttr(1)));
    return arith::XOrIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, x,
                              arith::SubIOp::create(b, loc, w, sign)),
        sign);
  }
  /// The zero region's sums as codes: every sum below kZeroBelow is zero.
  Value finish(OpBuilder &b, Location loc, Value sum) const {
    if (!zeroTable)
      return sum;
    CodeBuilder codes(b, loc, codeType, lanes);
    Value isZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, sum,
                              codes.constant(b.getI32IntegerAttr(kZeroBelow)));
    return arith::SelectOp::create(b, loc, isZero,
                                   codes.constantCode(codes::kZero), sum);
  }

  NumType type;
  const SbdbTables &tables;
  Value zeroTable;
  IntegerType codeType;
  int64_t lanes;
  Value inputPanels, weightPanels, bias, acc;
};
} // namespace

void TableTiles::build(OpBuilder &b, Location loc) const {
  auto dimOf = [](Value v, unsigned i) {
    return cast<RankedTensorType>(v.getType()).getDimSize(i);
  };
  scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, dimOf(weightPanels, 0)),
      index(b, loc, 1), ValueRange{},
      [&](OpBuilder &cb, Location cl, Value columnPanel, ValueRange) {
        scf::ForOp::create(
            cb, cl, index(cb, cl, 0), index(cb, cl, dimOf(inputPanels, 0)),
            index(cb, cl, 1), ValueRange{},
            [&](OpBuilder &rb, Location rl, Value rowPanel, ValueRange) {
              buildTile(rb, rl, rowPanel, columnPanel);
              scf::YieldOp::create(rb, rl);
            });
        scf::YieldOp::create(cb, cl);
      });
}

void TableTiles::buildTile(OpBuilder &b, Location loc, Value rowPanel,
                           Value columnPanel) const {
  int64_t k = cast<RankedTensorType>(inputPanels.getType()).getDimSize(1);
  CodeBuilder vectors(b, loc, codeType, lanes);
  Value zeros = zeroTable ? vectors.constant(b.getI32IntegerAttr(kZeroInput))
                          : vectors.constantCode(codes::kZero);
  SmallVector<Value> init(kRows * kVectors, zeros);
  auto overK = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, k), index(b, loc, 1), init,
      [&](OpBuilder &kb, Location kl, Value kk, ValueRange sums) {
        SmallVector<Value> w;
        for (int64_t v = 0; v < kVectors; ++v)
          w.push_back(
              read(kb, kl, weightPanels,
                   ValueRange{columnPanel, kk, index(kb, kl, v * lanes)}));
        SmallVector<Value> next;
        for (int64_t r = 0; r < kRows; ++r) {
          Value x = vector::BroadcastOp::create(
              kb, kl, vectorType(),
              tensor::ExtractOp::create(
                  kb, kl, inputPanels,
                  ValueRange{rowPanel, kk, index(kb, kl, r)}));
          for (int64_t v = 0; v < kVectors; ++v)
            next.push_back(
                add(kb, kl, sums[r * kVectors + v], mul(kb, kl, x, w[v])));
        }
        scf::YieldOp::create(kb, kl, next);
      });
  // The bias is added once, after the whole dot product.
  Value firstRow =
      arith::MulIOp::create(b, loc, rowPanel, index(b, loc, kRows));
  Value firstColumn = arith::MulIOp::create(b, loc, columnPanel,
                                            index(b, loc, kVectors * lanes));
  for (int64_t v = 0; v < kVectors; ++v) {
    Value column =
        arith::AddIOp::create(b, loc, firstColumn, index(b, loc, v * lanes));
    Value terms = bias ? read(b, loc, bias, ValueRange{column}) : Value();
    for (int64_t r = 0; r < kRows; ++r) {
      Value sum = overK.getResult(r * kVectors + v);
      if (terms)
        sum = add(b, loc, sum, terms);
      Value row = arith::AddIOp::create(b, loc, firstRow, index(b, loc, r));
      vector::StoreOp::create(b, loc, finish(b, loc, sum), acc,
                              ValueRange{row, column});
    }
  }
}

/// `byK` [K, X] (X a multiple of `width`) as panels [X/width, K, width].
static Value packPanels(OpBuilder &b, Location loc, Value byK, int64_t width) {
  auto type = cast<RankedTensorType>(byK.getType());
  int64_t k = type.getDimSize(0), x = type.getDimSize(1);
  Value split = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({k, x / width, width}, type.getElementType()), byK,
      ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{x / width, k, width}, type.getElementType());
  return linalg::TransposeOp::create(b, loc, split, init,
                                     ArrayRef<int64_t>{1, 0, 2})
      .getResult()[0];
}

int64_t lns::getTableKernelNarrowLimit(const SbdbTables &tables, int64_t k) {
  return zeroRegionHolds(tables, k) ? kSmall : int64_t(1) << 28;
}

Value lns::buildLinearTable(OpBuilder &b, Location loc, Value inputByK,
                            Value weightByK, Value bias, NumType type,
                            const SbdbTables &tables, unsigned vectorBits) {
  auto byK = cast<RankedTensorType>(inputByK.getType());
  auto codeType = cast<IntegerType>(byK.getElementType());
  int64_t k = byK.getDimSize(0), m = byK.getDimSize(1);
  int64_t n = cast<RankedTensorType>(weightByK.getType()).getDimSize(1);
  int64_t lanes = vectorBits / codeType.getWidth();
  int64_t width = lanes * kVectors;
  int64_t paddedM = llvm::alignTo(m, kRows), paddedN = llvm::alignTo(n, width);
  Value zeroCode = CodeBuilder(b, loc, codeType).constantCode(codes::kZero);
  Value zeroTable;
  if (codeType.getWidth() == 32 && zeroRegionHolds(tables, k)) {
    // Zero codes (the narrow zero, the only code below kZeroInput) become
    // kZeroInput; the padding too.
    std::vector<int32_t> table = zeroRegionTable(tables);
    zeroTable = arith::ConstantOp::create(
        b, loc,
        DenseIntElementsAttr::get(
            RankedTensorType::get({int64_t(table.size())}, b.getI32Type()),
            ArrayRef(table)));
    auto lift = [&](Value codes) -> Value {
      if (!codes)
        return codes;
      return mapElements(
          b, loc, codes, codes.getType(),
          [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
            return arith::MaxSIOp::create(
                nb, nl, args[0],
                arith::ConstantOp::create(nb, nl,
                                          nb.getI32IntegerAttr(kZeroInput)));
          });
    };
    inputByK = lift(inputByK);
    weightByK = lift(weightByK);
    bias = lift(bias);
    zeroCode =
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(kZeroInput));
  }
  Value acc = memref::AllocOp::create(
      b, loc, MemRefType::get({paddedM, paddedN}, codeType));
  TableTiles tiles(
      type, tables, zeroTable, codeType, lanes,
      packPanels(b, loc, padColumns(b, loc, inputByK, paddedM, zeroCode),
                 kRows),
      packPanels(b, loc, padColumns(b, loc, weightByK, paddedN, zeroCode),
                 width),
      bias ? padColumns(b, loc, bias, paddedN, zeroCode) : Value(), acc);
  tiles.build(b, loc);
  return unpadAccumulators(b, loc, acc, m, n);
}
