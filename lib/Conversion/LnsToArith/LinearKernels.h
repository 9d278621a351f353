//===- LinearKernels.h - Pieces shared by the lns lowerings -----*- C++ -*-===//

#ifndef LAMINA_LIB_CONVERSION_LNSTOARITH_LINEARKERNELS_H
#define LAMINA_LIB_CONVERSION_LNSTOARITH_LINEARKERNELS_H

#include "lamina/Conversion/LnsToArith/CodeBuilder.h"

#include "mlir/IR/Builders.h"

namespace mlir::lamina::lns {

/// Applies `body` element by element: directly on scalars, through an
/// element-wise linalg.generic on tensors. `operands` are converted values
/// of one shape; the result has `resultType` (already converted).
Value mapElements(OpBuilder &b, Location loc, ValueRange operands,
                  Type resultType,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// acc = init; for i in [first, count): acc = step(acc, i). Strictly in
/// order.
Value buildSequentialLoop(
    OpBuilder &b, Location loc, Value init, int64_t first, Value count,
    function_ref<Value(OpBuilder &, Location, Value, Value)> step);

/// An index constant.
Value index(OpBuilder &b, Location loc, int64_t value);

/// x[M, K]·W[N, K]ᵀ (+ bias[N]) on static i64 codes of `type`, K as the
/// outer loop (LinearKernels.cpp); `tables` set for `table` mode, whose
/// kernel runs on vectors of `vectorBits`.
Value buildLinearByK(OpBuilder &b, Location loc, Value input, Value weight,
                     Value bias, NumType type, const SbdbTables *tables,
                     unsigned vectorBits);

/// `values` [rows, n] (or [n]) padded with `zero` to `paddedN` columns.
Value padColumns(OpBuilder &b, Location loc, Value values, int64_t paddedN,
                 Value zero);

/// The tensor of a kernel's [rows, columns] accumulator buffer `acc`,
/// sliced to its first [m, n] (the padding dropped).
Value unpadAccumulators(OpBuilder &b, Location loc, Value acc, int64_t m,
                        int64_t n);

/// `table` x·Wᵀ (+ bias) from inputByK [K, M], weightByK [K, N] and bias
/// [N] (static codes, i64 or narrow i32) as explicit vector code, the
/// accumulators of a tile of outputs in registers, vectors of `vectorBits`
/// (TableKernel.cpp).
Value buildLinearTable(OpBuilder &b, Location loc, Value inputByK,
                       Value weightByK, Value bias, NumType type,
                       const SbdbTables &tables, unsigned vectorBits);

/// The bound below which every code must lie for buildLinearTable to take
/// i32 codes, for K terms.
int64_t getTableKernelNarrowLimit(const SbdbTables &tables, int64_t k);

struct PiecewiseSbdb;

/// `ideal` x·Wᵀ (+ bias) from inputByK [K, M], weightByK [K, N] and bias
/// [N] (static codes, i64 or narrow i32) as explicit vector code on the
/// piecewise cubics of `segments` (PiecewiseKernel.cpp).
Value buildLinearPiecewise(OpBuilder &b, Location loc, Value inputByK,
                           Value weightByK, Value bias, NumType type,
                           const PiecewiseSbdb &segments);

} // namespace mlir::lamina::lns

#endif // LAMINA_LIB_CONVERSION_LNSTOARITH_LINEARKERNELS_H
