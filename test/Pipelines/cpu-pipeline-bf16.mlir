// RUN: lamina-opt %s --lamina-cpu-pipeline="threads=1 vector-bits=512 bf16=dot" | FileCheck %s --check-prefix=DOT
// RUN: lamina-opt %s --lamina-cpu-pipeline="threads=1 vector-bits=512 bf16=widen" | FileCheck %s --check-prefix=WIDEN
// RUN: lamina-opt %s --lamina-cpu-pipeline="threads=1 vector-bits=256 bf16=dot" | FileCheck %s --check-prefix=WIDEN
// RUN: not lamina-opt %s --lamina-cpu-pipeline="bf16=fast" 2>&1 | FileCheck %s --check-prefix=BAD

// A bf16 layer (and its backward's dX and dW shapes) on AVX512-BF16: its
// matmuls are vdpbf16ps, 16 f32 lanes of pairs of k; 8 rows × 2 blocks ×
// 4 pairs of k per step of a register tile (64 dot products). With
// bf16=widen, or 256-bit vectors (the instruction is AVX-512's), FMAs on
// widened operands.
// DOT-LABEL: llvm.func @main(
// DOT-COUNT-64: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT: llvm.return
// WIDEN-LABEL: llvm.func @main(
// WIDEN-NOT: dpbf16ps
// WIDEN: llvm.return
// BAD: for the --bf16 option: Cannot find option named 'fast'!
func.func @main(%x: tensor<64x256xbf16>, %w: tensor<128x256xbf16>, %b: tensor<128xbf16>) -> tensor<64x128xbf16> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<64x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<64x128xbf16>
  return %0 : tensor<64x128xbf16>
}
