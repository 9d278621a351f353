//===- Passes.h - Transformations of the lamina dialect ---------*- C++ -*-===//

#ifndef LAMINA_LAMINA_TRANSFORMS_PASSES_H
#define LAMINA_LAMINA_TRANSFORMS_PASSES_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewriterBase;
class RewritePatternSet;
namespace lamina {

#define GEN_PASS_DECL
#include "lamina/Lamina/Transforms/Passes.h.inc"

/// Layer ops → matmul, sync, bias_add, activation, dropout.
void populateLaminaDecomposePatterns(RewritePatternSet &patterns);

/// Layer ops → lamina.fused_linear with the layer's epilogue.
void populateLayerToFusedLinearPatterns(RewritePatternSet &patterns);

/// matmul → [sync] → bias → activation → dropout chains → fused_linear.
void populateFuseEpiloguePatterns(RewritePatternSet &patterns);

/// Fuses `matmul` and its single-use epilogue chain ([fwd_post sync] →
/// [bias_add] → [activation] → [dropout]) into one fused_linear; failure,
/// with nothing changed, when no step follows the matmul.
FailureOr<FusedLinearOp> fuseMatmulEpilogue(RewriterBase &rewriter,
                                            MatmulOp matmul);

#define GEN_PASS_REGISTRATION
#include "lamina/Lamina/Transforms/Passes.h.inc"

} // namespace lamina
} // namespace mlir

#endif // LAMINA_LAMINA_TRANSFORMS_PASSES_H
