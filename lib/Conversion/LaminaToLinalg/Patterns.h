//===- Patterns.h - The op families of convert-lamina-to-linalg -*- C++ -*-===//
//
// Each family of lamina ops lowers in its own file; the pass and
// populateLaminaToLinalgPatterns collect them here.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LAMINATOLINALG_PATTERNS_H
#define LAMINA_CONVERSION_LAMINATOLINALG_PATTERNS_H

namespace mlir {
class RewritePatternSet;
namespace lamina {

/// lamina.layer_norm → linalg row reductions; lamina.softmax →
/// linalg.softmax.
void populateNormalizationToLinalgPatterns(RewritePatternSet &patterns);

/// lamina.embedding, masked_fill, cross_entropy and the gradients of the
/// embedding and the loss → linalg (and a loop over the tokens).
void populateModelOpsToLinalgPatterns(RewritePatternSet &patterns);

/// lamina.rope → one linalg.generic over the input's pairs.
void populateRopeToLinalgPatterns(RewritePatternSet &patterns);

/// lamina.activation_grad, softmax_grad, layer_norm_grad → linalg.
void populateDerivativesToLinalgPatterns(RewritePatternSet &patterns);

} // namespace lamina
} // namespace mlir

#endif // LAMINA_CONVERSION_LAMINATOLINALG_PATTERNS_H
