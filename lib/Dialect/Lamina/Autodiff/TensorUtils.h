//===- TensorUtils.h - Tensor pieces the reverse-mode rules share -*- C++ -*-===//

#ifndef LAMINA_LIB_DIALECT_LAMINA_AUTODIFF_TENSORUTILS_H
#define LAMINA_LIB_DIALECT_LAMINA_AUTODIFF_TENSORUTILS_H

#include "mlir/IR/Builders.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::lamina::autodiff {

/// Attaches the rules of the upstream ops found between layers
/// (UpstreamRules.cpp).
void registerUpstreamRules(DialectRegistry &registry);

/// A tensor of `like`'s type filled with zeros.
Value buildZerosLike(OpBuilder &b, Location loc, Value like);

/// `value` with its dims permuted (result dim i = source dim permutation[i]).
Value buildTranspose(OpBuilder &b, Location loc, Value value,
                     ArrayRef<int64_t> permutation);

/// The 2-D transpose of a matrix.
Value buildTranspose2D(OpBuilder &b, Location loc, Value matrix);

/// `value` [..., K] as [M, K] (rank 1 stays as it is).
Value buildFlattenRows(OpBuilder &b, Location loc, Value value);

/// Σ of `value` [..., N] over every dim but the last: [N].
Value buildSumLeadingDims(OpBuilder &b, Location loc, Value value);

} // namespace mlir::lamina::autodiff

#endif // LAMINA_LIB_DIALECT_LAMINA_AUTODIFF_TENSORUTILS_H
