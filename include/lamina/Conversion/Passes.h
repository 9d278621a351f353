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

/// Patterns lowering every lamina op to linalg, tensor, arith and lns; a
/// layer's matmul follows its `lamina.codegen` layout.
void populateLaminaToLinalgPatterns(RewritePatternSet &patterns);

/// `activation_grad(x, matmul(dy, W))` (the backward's dH) → one matmul
/// whose epilogue multiplies by the activation's derivative at x; applied
/// by convert-lamina-to-linalg before the conversion.
void populateActivationGradFusionPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "lamina/Conversion/Passes.h.inc"

} // namespace lamina
} // namespace mlir

#endif // LAMINA_CONVERSION_PASSES_H
