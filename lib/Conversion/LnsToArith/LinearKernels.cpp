//===- LinearKernels.cpp - LNS linear layers with K as the outer loop -----===//
//
// x[M, K]·W[N, K]ᵀ (+ b) on codes: every step k updates all M×N
// accumulators element-wise (acc = add(acc, mul(x[m, k], w[n, k]))), which
// keeps each output's order of additions (k = 0..K−1, the bias last) and
// lets the step be vectorized across outputs. `ideal` mode takes the
// certified fast path and recomputes flagged outputs exactly (or the
// piecewise kernel, PiecewiseKernel.cpp); `table` mode has its own kernel
// (TableKernel.cpp). Both run on i32 lanes when every code is small.
//
//===----------------------------------------------------------------------===//

#include "LinearKernels.h"
#include "PiecewiseSbdb.h"

#include "lamina/Conversion/LnsToArith/CodeBuilder.h"
#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::lns;

/// Row `index` of a [K, X] matrix of codes, as a [X] tensor.
static Value extractRow(OpBuilder &b, Location loc, Value matrix,
                        Value index) {
  auto type = cast<RankedTensorType>(matrix.getType());
  int64_t size = type.getDimSize(1);
  SmallVector<OpFoldResult> offsets = {index, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                     b.getIndexAttr(size)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({size}, type.getElementType()), matrix,
      offsets, sizes, strides);
}

/// A tensor of `type` (codes of its element type) filled with zero codes.
static Value fillWithZeroCodes(OpBuilder &b, Location loc,
                               RankedTensorType type) {
  CodeBuilder codes(b, loc, cast<IntegerType>(type.getElementType()));
  return linalg::FillOp::create(
             b, loc, ValueRange{codes.constantCode(lns::codes::kZero)},
             ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(),
                                                type.getElementType())})
      .getResult(0);
}

/// Whether every code of `codes` (i64) is the zero code or below `limit`
/// in magnitude (so that the i32 kernels can take them).
static Value allNarrow(OpBuilder &b, Location loc, Value codes,
                       int64_t limit) {
  auto type = cast<RankedTensorType>(codes.getType());
  MLIRContext *context = b.getContext();
  Value init = linalg::FillOp::create(
                   b, loc,
                   ValueRange{arith::ConstantOp::create(b, loc,
                                                        b.getBoolAttr(true))},
                   ValueRange{tensor::EmptyOp::create(
                       b, loc, ArrayRef<int64_t>{}, b.getI1Type())})
                   .getResult(0);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(type.getRank(), context),
      AffineMap::get(type.getRank(), 0, {}, context)};
  SmallVector<utils::IteratorType> reduction(type.getRank(),
                                             utils::IteratorType::reduction);
  Value all = linalg::GenericOp::create(
                  b, loc, init.getType(), ValueRange{codes}, ValueRange{init},
                  maps, reduction,
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    auto constant = [&](int64_t v) -> Value {
                      return arith::ConstantOp::create(
                          nb, nl, nb.getI64IntegerAttr(v));
                    };
                    Value c = args[0];
                    Value small = arith::AndIOp::create(
                        nb, nl,
                        arith::CmpIOp::create(nb, nl,
                                              arith::CmpIPredicate::sgt, c,
                                              constant(-limit)),
                        arith::CmpIOp::create(nb, nl,
                                              arith::CmpIPredicate::slt, c,
                                              constant(limit)));
                    Value zero = arith::CmpIOp::create(
                        nb, nl, arith::CmpIPredicate::eq, c,
                        constant(lns::codes::kZero));
                    Value ok = arith::OrIOp::create(nb, nl, small, zero);
                    linalg::YieldOp::create(
                        nb, nl,
                        ValueRange{arith::AndIOp::create(nb, nl, args[1],
                                                         ok)});
                  })
                  .getResult(0);
  return tensor::ExtractOp::create(b, loc, all, ValueRange{});
}

/// Codes re-expressed in `to` (i32 or i64): values unchanged, the zero
/// code mapped to that width's.
static Value recode(OpBuilder &b, Location loc, Value codes, Type to) {
  auto type = cast<RankedTensorType>(codes.getType());
  Type from = type.getElementType();
  bool narrowing = to.getIntOrFloatBitWidth() < from.getIntOrFloatBitWidth();
  return mapElements(
      b, loc, codes, type.clone(to),
      [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        int64_t fromZero = narrowing ? lns::codes::kZero : kNarrowZero;
        int64_t toZero = narrowing ? kNarrowZero : lns::codes::kZero;
        Value isZero = arith::CmpIOp::create(
            nb, nl, arith::CmpIPredicate::eq, args[0],
            arith::ConstantOp::create(nb, nl,
                                      nb.getIntegerAttr(from, fromZero)));
        Value value =
            narrowing
                ? arith::TruncIOp::create(nb, nl, to, args[0]).getResult()
                : arith::ExtSIOp::create(nb, nl, to, args[0]).getResult();
        return arith::SelectOp::create(
            nb, nl, isZero,
            arith::ConstantOp::create(nb, nl, nb.getIntegerAttr(to, toZero)),
            value);
      });
}

/// The K-outer sums with the exact formula on i64 codes: inputByK [K, M],
/// weightByK [K, N] and bias [N].
static Value buildRowsByKExact(OpBuilder &b, Location loc, Value inputByK,
                               Value weightByK, Value bias, NumType type) {
  IntegerType codeInt = b.getI64Type();
  auto byK = cast<RankedTensorType>(inputByK.getType());
  int64_t k = byK.getDimSize(0), m = byK.getDimSize(1);
  int64_t n = cast<RankedTensorType>(weightByK.getType()).getDimSize(1);
  auto resultType = RankedTensorType::get({m, n}, codeInt);
  Value zeros = fillWithZeroCodes(b, loc, resultType);
  MLIRContext *context = b.getContext();
  AffineExpr dm, dn;
  bindDims(context, dm, dn);
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {dm}, context),
                                 AffineMap::get(2, 0, {dn}, context),
                                 AffineMap::get(2, 0, {dm, dn}, context)};
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  Value acc = buildSequentialLoop(
      b, loc, zeros, 0, index(b, loc, k),
      [&](OpBuilder &nb, Location nl, Value acc, Value step) -> Value {
        Value x = extractRow(nb, nl, inputByK, step);
        Value w = extractRow(nb, nl, weightByK, step);
        return linalg::GenericOp::create(
                   nb, nl, resultType, ValueRange{x, w}, ValueRange{acc},
                   maps, parallel,
                   [&](OpBuilder &bb, Location bl, ValueRange args) {
                     CodeBuilder inner(bb, bl, codeInt);
                     linalg::YieldOp::create(
                         bb, bl,
                         ValueRange{inner.add(args[2],
                                              inner.mul(args[0], args[1]),
                                              type)});
                   })
            .getResult(0);
      });
  if (!bias)
    return acc;
  // The bias is added once, after the whole dot product.
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{bias}, ValueRange{acc},
             ArrayRef<AffineMap>{maps[1], maps[2]}, parallel,
             [&](OpBuilder &bb, Location bl, ValueRange args) {
               CodeBuilder inner(bb, bl, codeInt);
               linalg::YieldOp::create(
                   bb, bl,
                   ValueRange{inner.add(args[1], args[0], type)});
             })
      .getResult(0);
}

/// acc [M, N] (i64 codes) with every output whose flag (i8) is set
/// recomputed from scratch with the exact formula, in order.
static Value recomputeFlaggedOutputs(OpBuilder &b, Location loc, Value acc,
                                     Value flags, Value inputByK,
                                     Value weightByK, Value bias,
                                     NumType type) {
  auto accType = cast<RankedTensorType>(acc.getType());
  int64_t m = accType.getDimSize(0), n = accType.getDimSize(1);
  int64_t k = cast<RankedTensorType>(inputByK.getType()).getDimSize(0);
  auto exactOutput = [&](OpBuilder &nb, Location nl, Value mi, Value ni) {
    CodeBuilder codes(nb, nl);
    Value sum = buildSequentialLoop(
        nb, nl, codes.constantCode(lns::codes::kZero), 0, index(nb, nl, k),
        [&](OpBuilder &ib, Location il, Value partial, Value kk) {
          CodeBuilder inner(ib, il);
          Value x = tensor::ExtractOp::create(ib, il, inputByK,
                                              ValueRange{kk, mi});
          Value w = tensor::ExtractOp::create(ib, il, weightByK,
                                              ValueRange{kk, ni});
          return inner.add(partial, inner.mul(x, w), type);
        });
    if (bias)
      sum = codes.add(sum, tensor::ExtractOp::create(nb, nl, bias, ni), type);
    return sum;
  };
  Value lower = index(b, loc, 0), one = index(b, loc, 1);
  auto overRows = scf::ForOp::create(
      b, loc, lower, index(b, loc, m), one, ValueRange{acc},
      [&](OpBuilder &rb, Location rl, Value mi, ValueRange rowsAcc) {
        auto overCols = scf::ForOp::create(
            rb, rl, lower, index(rb, rl, n), one, rowsAcc,
            [&](OpBuilder &cb, Location cl, Value ni, ValueRange colsAcc) {
              Value flag = tensor::ExtractOp::create(cb, cl, flags,
                                                     ValueRange{mi, ni});
              Value flagged = arith::CmpIOp::create(
                  cb, cl, arith::CmpIPredicate::ne, flag,
                  arith::ConstantOp::create(cb, cl, cb.getI8IntegerAttr(0)));
              auto fix = scf::IfOp::create(
                  cb, cl, flagged,
                  [&](OpBuilder &tb, Location tl) {
                    Value exact = exactOutput(tb, tl, mi, ni);
                    scf::YieldOp::create(
                        tb, tl,
                        ValueRange{tensor::InsertOp::create(
                            tb, tl, exact, colsAcc[0], ValueRange{mi, ni})});
                  },
                  [&](OpBuilder &eb, Location el) {
                    scf::YieldOp::create(eb, el, colsAcc);
                  });
              scf::YieldOp::create(cb, cl, fix.getResults());
            });
        scf::YieldOp::create(rb, rl, overCols.getResults());
      });
  return overRows.getResult(0);
}

/// `ideal` mode through the certified fast path: every step adds with
/// CodeBuilder::addFast and ORs its near-tie flag into a per-output flag;
/// at the end each flagged output (rare: at f = 23 the bound is about
/// 10^-6 of a unit, so few additions come that close to a .5 tie) is
/// recomputed from scratch with the exact formula, in the same order.
/// Unflagged outputs are exact by the bound.
static Value buildRowsByKFast(OpBuilder &b, Location loc, Value inputByK,
                              Value weightByK, Value bias, NumType type) {
  auto byK = cast<RankedTensorType>(inputByK.getType());
  int64_t k = byK.getDimSize(0), m = byK.getDimSize(1);
  int64_t n = cast<RankedTensorType>(weightByK.getType()).getDimSize(1);
  auto resultType = RankedTensorType::get({m, n}, b.getI64Type());
  Value zeros = fillWithZeroCodes(b, loc, resultType);
  MLIRContext *context = b.getContext();
  Type i8 = b.getI8Type();
  auto flagsType = RankedTensorType::get(resultType.getShape(), i8);
  Value noFlags = linalg::FillOp::create(
                      b, loc,
                      ValueRange{arith::ConstantOp::create(
                          b, loc, b.getI8IntegerAttr(0))},
                      ValueRange{tensor::EmptyOp::create(
                          b, loc, resultType.getShape(), i8)})
                      .getResult(0);
  AffineExpr dm, dn;
  bindDims(context, dm, dn);
  AffineMap rows = AffineMap::get(2, 0, {dm}, context);
  AffineMap cols = AffineMap::get(2, 0, {dn}, context);
  AffineMap both = AffineMap::get(2, 0, {dm, dn}, context);
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  // One pass: (acc, flags) ← (addFast(... addFast(acc, t0) ..., tn),
  // flags | nearTie of each), the terms in order.
  auto step = [&](OpBuilder &nb, Location nl, ValueRange inputs,
                  ArrayRef<AffineMap> inputMaps, Value acc, Value flags,
                  function_ref<SmallVector<Value>(CodeBuilder &, ValueRange)>
                      terms) {
    SmallVector<AffineMap> maps(inputMaps);
    maps.append({both, both});
    return linalg::GenericOp::create(
               nb, nl, TypeRange{resultType, flagsType}, inputs,
               ValueRange{acc, flags}, maps, parallel,
               [&](OpBuilder &bb, Location bl, ValueRange args) {
                 CodeBuilder codes(bb, bl);
                 size_t count = inputs.size();
                 Value sum = args[count], flag = args[count + 1];
                 for (Value term : terms(codes, args.take_front(count))) {
                   auto [next, nearTie] = codes.addFast(sum, term, type);
                   sum = next;
                   flag = arith::OrIOp::create(
                       bb, bl, flag,
                       arith::ExtUIOp::create(bb, bl, bb.getI8Type(), nearTie));
                 }
                 linalg::YieldOp::create(bb, bl, ValueRange{sum, flag});
               })
        ->getResults();
  };
  // Two k per pass when K is even: the accumulators stay in registers
  // between the two additions (each output's order is unchanged).
  int64_t unroll = k % 2 == 0 ? 2 : 1;
  Value lower = arith::ConstantIndexOp::create(b, loc, 0);
  auto loop = scf::ForOp::create(
      b, loc, lower, index(b, loc, k), index(b, loc, unroll),
      ValueRange{zeros, noFlags},
      [&](OpBuilder &nb, Location nl, Value kk, ValueRange carried) {
        SmallVector<Value> rowsOfK;
        SmallVector<AffineMap> maps;
        for (int64_t u = 0; u < unroll; ++u) {
          Value ku = arith::AddIOp::create(nb, nl, kk, index(nb, nl, u));
          rowsOfK.push_back(extractRow(nb, nl, inputByK, ku));
          rowsOfK.push_back(extractRow(nb, nl, weightByK, ku));
          maps.append({rows, cols});
        }
        ResultRange next = step(
            nb, nl, rowsOfK, maps, carried[0], carried[1],
            [](CodeBuilder &codes, ValueRange v) {
              SmallVector<Value> products;
              for (size_t i = 0; i + 1 < v.size(); i += 2)
                products.push_back(codes.mul(v[i], v[i + 1]));
              return products;
            });
        scf::YieldOp::create(nb, nl, ValueRange(next));
      });
  Value acc = loop.getResult(0), flags = loop.getResult(1);
  if (bias) {
    ResultRange withBias =
        step(b, loc, ValueRange{bias}, {cols}, acc, flags,
             [](CodeBuilder &, ValueRange v) {
               return SmallVector<Value>{v[0]};
             });
    acc = withBias[0];
    flags = withBias[1];
  }

  return recomputeFlaggedOutputs(b, loc, acc, flags, inputByK, weightByK,
                                 bias, type);
}

Value lns::padColumns(OpBuilder &b, Location loc, Value values,
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

Value lns::unpadAccumulators(OpBuilder &b, Location loc, Value acc,
                             int64_t m, int64_t n) {
  auto type = cast<MemRefType>(acc.getType());
  Value result = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
      acc, /*restrict=*/true, /*writable=*/true);
  if (type.getDimSize(0) == m && type.getDimSize(1) == n)
    return result;
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(m), b.getIndexAttr(n)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({m, n}, type.getElementType()), result,
      offsets, sizes, strides);
}

Value lns::buildLinearByK(OpBuilder &b, Location loc, Value input,
                          Value weight, Value bias, NumType type,
                          const SbdbTables *tables,
                          unsigned vectorBits) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t m = inputType.getDimSize(0), k = inputType.getDimSize(1);
  int64_t n = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  Type i64 = b.getI64Type();
  auto transpose = [&](Value value, int64_t rows, int64_t cols) {
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{cols, rows},
                                         i64);
    return linalg::TransposeOp::create(b, loc, value, init,
                                       ArrayRef<int64_t>{1, 0})
        .getResult()[0];
  };
  // Columns of x and of W as contiguous rows.
  Value inputByK = transpose(input, m, k);
  Value weightByK = transpose(weight, n, k);
  // i32 lanes (twice as many per vector) when every code is small; the
  // packed i64 codes otherwise.
  auto narrowDispatch =
      [&](int64_t limit,
          function_ref<Value(OpBuilder &, Location, Value, Value, Value)>
              kernel) {
        Value narrow = allNarrow(b, loc, inputByK, limit);
        narrow = arith::AndIOp::create(b, loc, narrow,
                                       allNarrow(b, loc, weightByK, limit));
        if (bias)
          narrow = arith::AndIOp::create(b, loc, narrow,
                                         allNarrow(b, loc, bias, limit));
        return scf::IfOp::create(
                   b, loc, narrow,
                   [&](OpBuilder &nb, Location nl) {
                     Type i32 = nb.getI32Type();
                     Value result = kernel(
                         nb, nl, recode(nb, nl, inputByK, i32),
                         recode(nb, nl, weightByK, i32),
                         bias ? recode(nb, nl, bias, i32) : Value());
                     scf::YieldOp::create(
                         nb, nl, recode(nb, nl, result, nb.getI64Type()));
                   },
                   [&](OpBuilder &nb, Location nl) {
                     scf::YieldOp::create(
                         nb, nl, kernel(nb, nl, inputByK, weightByK, bias));
                   })
            .getResult(0);
      };
  if (!tables && isFastSbdbExact(type)) {
    std::optional<PiecewiseSbdb> segments = buildPiecewiseSbdb(type);
    if (!segments)
      return buildRowsByKFast(b, loc, inputByK, weightByK, bias, type);
    auto kernel = [&](OpBuilder &nb, Location nl, Value x, Value w,
                      Value c) {
      return buildLinearPiecewise(nb, nl, x, w, c, type, *segments);
    };
    // (The i32 kernel also needs 2^octaves ≤ 2^28: a zero code's exponent,
    // −2^30, must lie past every segment from any other code's.)
    if (!isNarrowSbdb(type) || segments->octaves > 28 ||
        k >= (int64_t(1) << 30))
      return kernel(b, loc, inputByK, weightByK, bias);
    // i32 lanes for inputs below 2^29 (exponents below 2^28): products lie
    // within ±2^30, and no sum leaves ±1.5·2^30. Going down needs a near
    // cancellation, which costs at most max|sbdb| < 2^29 below the larger
    // operand, and an accumulator below every product cannot cancel again;
    // going up, K terms add at most log_b K + K/2 to the largest product.
    return narrowDispatch(int64_t(1) << 29, kernel);
  }
  if (!tables)
    return buildRowsByKExact(b, loc, inputByK, weightByK, bias, type);
  // Table mode: sums of codes below 2^28 stay far inside i32 (below 2^26,
  // the kernel's zero region holds).
  return narrowDispatch(
      getTableKernelNarrowLimit(*tables, k),
      [&](OpBuilder &nb, Location nl, Value x, Value w, Value c) {
        return buildLinearTable(nb, nl, x, w, c, type, *tables, vectorBits);
      });
}
