//===- Passes.h - Transformations of the lamina dialect ---------*- C++ -*-===//

#ifndef LAMINA_LAMINA_TRANSFORMS_PASSES_H
#define LAMINA_LAMINA_TRANSFORMS_PASSES_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace func {
class FuncOp;
} // namespace func
class RewriterBase;
class RewritePatternSet;
namespace lamina {

#define GEN_PASS_DECL
#include "lamina/Lamina/Transforms/Passes.h.inc"

/// Layer ops → matmul, sync, bias_add, activation, dropout.
void populateLaminaDecomposePatterns(RewritePatternSet &patterns);

/// Layer ops → lamina.fused_linear with the layer's epilogue.
void populateLayerToFusedLinearPatterns(RewritePatternSet &patterns);

/// matmul → [sync] → bias → activation → dropout chains → fused_linear;
/// with `rope`, matmul → heads view → interleaved lamina.rope too.
void populateFuseEpiloguePatterns(RewritePatternSet &patterns,
                                  bool rope = false);

/// Fuses `matmul` and its single-use epilogue chain ([fwd_post sync] →
/// [bias_add] → [activation] → [dropout]) into one fused_linear; failure,
/// with nothing changed, when no step follows the matmul. With `rope`, a
/// matmul whose result is only viewed as [..., heads, head_dim] and rotated
/// by an interleaved lamina.rope gets that rope as its epilogue instead.
FailureOr<FusedLinearOp> fuseMatmulEpilogue(RewriterBase &rewriter,
                                            MatmulOp matmul, bool rope = false);

/// Rewrites every function of `module` (of world size > 1, layers
/// decomposed) into what one rank computes, as lamina-partition does; a
/// module of one rank or already partitioned is left as it is. With
/// `keepBackwardSyncs`, bwd_post syncs stay (the identity, on per-rank
/// types) and each collective records the sync it implements
/// (kFromSyncAttrName): what lamina-generate-backward transposes.
LogicalResult partitionModule(ModuleOp module, bool keepBackwardSyncs = false);

#define GEN_PASS_REGISTRATION
#include "lamina/Lamina/Transforms/Passes.h.inc"

} // namespace lamina
} // namespace mlir

#endif // LAMINA_LAMINA_TRANSFORMS_PASSES_H
