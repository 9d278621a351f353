//===- Passes.h - Conversions out of Lamina's dialects ----------*- C++ -*-===//

#ifndef LAMINA_CONVERSION_PASSES_H
#define LAMINA_CONVERSION_PASSES_H

#include "lamina/Conversion/LaminaToGPU/GpuChips.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class ConversionTarget;
class RewritePatternSet;
namespace lamina {

#define GEN_PASS_DECL
#include "lamina/Conversion/Passes.h.inc"

/// Patterns lowering every lamina op to linalg, tensor, arith and lns;
/// `weightBlock > 0` packs weights in blocks of that many output features.
void populateLaminaToLinalgPatterns(RewritePatternSet &patterns,
                                    int64_t weightBlock = 0);

/// `activation_grad(x, matmul(dy, W))` (the backward's dH) → one matmul
/// whose epilogue multiplies by the activation's derivative at x; applied
/// by convert-lamina-to-linalg before the conversion.
void populateActivationGradFusionPatterns(RewritePatternSet &patterns,
                                          int64_t weightBlock = 0);

#define GEN_PASS_REGISTRATION
#include "lamina/Conversion/Passes.h.inc"

} // namespace lamina
} // namespace mlir

#endif // LAMINA_CONVERSION_PASSES_H
