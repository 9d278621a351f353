//===- Passes.td - Conversions out of Lamina's dialects ----*- tablegen -*-===//

#ifndef LAMINA_CONVERSION_PASSES_TD
#define LAMINA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLaminaToLinalg : Pass<"convert-lamina-to-linalg"> {
  let summary = "Lower lamina ops to linalg, tensor and arith";
  let description = [{
    Every float layer becomes a transposed-B `linalg.matmul` (f32
    accumulation for f16/bf16 inputs) writing an accumulator, followed by
    one element-wise `linalg.generic` epilogue that adds the bias, applies
    the activation and the dropout and converts to the result type, reading
    the accumulator it overwrites. The two carry `lamina.stage = "matmul"`
    and `"epilogue"` so that the CPU and GPU pipelines fuse the epilogue
    into the matmul tile.

    Dropout draws its mask from a counter-based Philox-4x32-10 generator
    written in `arith`: key = the seed operand, counter = (global element
    index, the op's offset, stream), so masks depend only on (seed, offset,
    element index) and are identical on every target and every run.
    `fused_qkv` lowers to the projection followed by the interleaved split.
    Layers on LNS numbers lower to `lns.linear` / `lns.add`.

    Sync points must have been partitioned into collectives first; in a
    single-rank program they are the identity.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::lamina::lns::LnsDialect",
  ];
}

#endif // LAMINA_CONVERSION_PASSES_TD
