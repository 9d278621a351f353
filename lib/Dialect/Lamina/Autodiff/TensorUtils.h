//===- TensorUtils.h - Tensor pieces the reverse-mode rules share -*- C++ -*-===//

#ifndef LAMINA_LIB_DIALECT_LAMINA_AUTODIFF_TENSORUTILS_H
#define LAMINA_LIB_DIALECT_LAMINA_AUTODIFF_TENSORUTILS_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/Builders.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::lamina::autodiff {

/// Attaches the rules of the upstream ops found between layers
/// (UpstreamRules.cpp).
void registerUpstreamRules(DialectRegistry &registry);

/// Attaches the rules of the element-wise math ops (MathRules.cpp).
void registerMathRules(DialectRegistry &registry);

/// Attaches the rules of the lns ops (LnsRules.cpp).
void registerLnsRules(DialectRegistry &registry);

/// Attaches the rules of the lns activations, losses and convolutions
/// (LnsNetworkRules.cpp).
void registerLnsNetworkRules(DialectRegistry &registry);

/// Attaches the rules of 2-D convolutions and zero paddings
/// (ConvolutionRules.cpp).
void registerConvolutionRules(DialectRegistry &registry);

/// Attaches the rules of the collectives of partitioned programs
/// (CollectiveRules.cpp).
void registerCollectiveRules(DialectRegistry &registry);

/// The backward collective of `sync` (layout::syncBackward) applied to the
/// gradient `dy` on the partitioned module's grid, giving a value of type
/// `type`; `dy` itself for the identity.
Value buildSyncBackward(OpBuilder &b, Location loc, lamina::SyncAttr sync,
                        Value dy, Type type);

/// A tensor of `sizes` and element type `elt` filled with zeros.
Value buildZeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                 Type elt);

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

/// The code of the double `v` in the base of `like` (the spec's encode
/// rule), as a constant of `like`'s LNS type: a splat for tensors.
Value buildLnsConstantLike(OpBuilder &b, Location loc, double v, Value like);

/// The same Σ of LNS codes as the LNS training spec sums a bias gradient:
/// one sequential lns.sum over the leading dims flattened (LnsRules.cpp).
Value buildLnsSumLeadingDims(OpBuilder &b, Location loc, Value value);

} // namespace mlir::lamina::autodiff

#endif // LAMINA_LIB_DIALECT_LAMINA_AUTODIFF_TENSORUTILS_H
