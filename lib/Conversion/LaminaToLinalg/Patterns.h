//===- Patterns.h - The op families of convert-lamina-to-linalg -*- C++ -*-===//
//
// Each family of lamina ops lowers in its own file; the pass and
// populateLaminaToLinalgPatterns collect them here.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LAMINATOLINALG_PATTERNS_H
#define LAMINA_CONVERSION_LAMINATOLINALG_PATTERNS_H

#include "mlir/IR/Builders.h"

namespace mlir {
class RewritePatternSet;
namespace lamina {

/// An empty tensor of `shapeSource`'s sizes and `elementType`.
Value emptyLike(OpBuilder &b, Location loc, Value shapeSource,
                Type elementType);

/// A zero-filled accumulator of `shape`.
Value buildZeroAccumulator(OpBuilder &b, Location loc,
                           ArrayRef<OpFoldResult> shape, Type accElt);

/// The rotary embedding (interleaved pairs) of a linear layer's packed
/// accumulator `acc` [M, N/B, B], whose result of type `resultType` (rows
/// flattened into M) is viewed as [..., heads, 2 · cos's last dim] with the
/// tables `cos` and `sin` of lamina.rope: the epilogue generic (elements
/// of `resultElt`) and the generic of each element's pair partner it reads.
Value buildRopeEpilogue(OpBuilder &b, Location loc, Value acc, Value cos,
                        Value sin, RankedTensorType resultType,
                        Type resultElt);

/// lamina.layer_norm → linalg row reductions; lamina.softmax →
/// linalg.softmax.
void populateNormalizationToLinalgPatterns(RewritePatternSet &patterns);

/// lamina.embedding, masked_fill, cross_entropy and the gradients of the
/// embedding and the loss → linalg (and a loop over the tokens).
void populateModelOpsToLinalgPatterns(RewritePatternSet &patterns);

/// lamina.rope → one linalg.generic over the input's pairs.
void populateRopeToLinalgPatterns(RewritePatternSet &patterns);

/// Layers on LNS numbers: lamina.fused_linear and lamina.matmul →
/// lns.linear, lamina.bias_add → lns.add of the broadcast bias.
void populateLnsLayersToLnsPatterns(RewritePatternSet &patterns);

/// lamina.activation_grad, softmax_grad, layer_norm_grad → linalg.
void populateDerivativesToLinalgPatterns(RewritePatternSet &patterns);

} // namespace lamina
} // namespace mlir

#endif // LAMINA_CONVERSION_LAMINATOLINALG_PATTERNS_H
