// REQUIRES: ptxas
// SiLU (LLaMA's gate) in the fused epilogue of a bf16 layer, and the
// layer's backward with silu′ = σ·(1 + x·(1 − σ)), assemble with ptxas for
// sm_90a and sm_80 without spills; σ = 1 / (1 + exp(−x)) is one reciprocal
// per element (exp is the polynomial of lamina-approximate-math).
//
// Kernels in module order: @main (the fused layer), @main_forward (matmul
// + bias, then silu apart: its input is saved), @main_backward (silu′,
// then the transposes, dX, dW and db).
//
// RUN: lamina-opt %s --lamina-generate-backward --lamina-gpu-pipeline > %t.90a.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.90a.mlir %t.90a | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_90a -v %t.90a.0.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: %ptxas -arch=sm_90a -v %t.90a.2.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t.90a.3.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: FileCheck %s --check-prefix=GRAD < %t.90a.3.ptx
// RUN: lamina-opt %s --lamina-generate-backward "--lamina-gpu-pipeline=chip=sm_80" > %t.80.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.80.mlir %t.80 | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_80 -v %t.80.0.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.3.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS

// COUNT: 10 PTX modules

// PTXAS-NOT:  C75{{[0-9][0-9]}}
// PTXAS:      0 bytes spill stores, 0 bytes spill loads
// WIDE-NEXT:  Used 168 registers
// PTXAS-NOT:  C75{{[0-9][0-9]}}

// GRAD:       .entry main_backward_kernel(
// GRAD:       rcp.rn.f32
// GRAD-NOT:   rcp.rn.f32
// GRAD:       ret;

func.func @main(%x: tensor<256x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<256x4096xbf16> {
  %y = lamina.linear_act "gate" %x, %w bias %b activation silu
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  return %y : tensor<256x4096xbf16>
}
