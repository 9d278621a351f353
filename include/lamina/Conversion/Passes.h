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

/// How a float matmul's operands are packed for the CPU's register tiles
/// (0: not packed; see convert-lamina-to-linalg's options).
struct MatmulPacking {
  /// W[N, K] in blocks of this many output features.
  int64_t weightBlock = 0;
  /// A transposed input (the backward's dW = dyᵀ·x) in panels of this many
  /// rows; with `weightBlock` only.
  int64_t rowPanel = 0;
  /// bf16 operands packed in pairs of consecutive k as well (`[N/B, K/2, B,
  /// 2]`), the layout of AVX512-BF16's dot product; with `weightBlock` only.
  bool bf16Pairs = false;
};

/// Patterns lowering every lamina op to linalg, tensor, arith and lns.
void populateLaminaToLinalgPatterns(RewritePatternSet &patterns,
                                    MatmulPacking packing = {});

/// `activation_grad(x, matmul(dy, W))` (the backward's dH) → one matmul
/// whose epilogue multiplies by the activation's derivative at x; applied
/// by convert-lamina-to-linalg before the conversion.
void populateActivationGradFusionPatterns(RewritePatternSet &patterns,
                                          MatmulPacking packing = {});

#define GEN_PASS_REGISTRATION
#include "lamina/Conversion/Passes.h.inc"

} // namespace lamina
} // namespace mlir

#endif // LAMINA_CONVERSION_PASSES_H
