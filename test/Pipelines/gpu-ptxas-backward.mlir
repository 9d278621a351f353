// REQUIRES: ptxas
// The backward of an MLP (and its forward with the saved activations)
// assembles with ptxas for sm_90a and sm_80: no spills, none of the infos
// that mean a serialised wgmma pipeline (C75xx).
//
// Kernels in module order: @main (fc1, fc2), @main_forward (fc1, gelu,
// fc2), @main_backward (db2, W2ᵀ, dH·gelu′, dyᵀ, hᵀ, dW2, db1, W1ᵀ, dx,
// dp1ᵀ, xᵀ, dW1).
//
// RUN: lamina-opt %s --lamina-generate-backward --lamina-gpu-pipeline > %t.90a.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.90a.mlir %t.90a | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_90a -v %t.90a.3.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t.90a.5.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t.90a.6.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t.90a.7.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: %ptxas -arch=sm_90a -v %t.90a.10.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: %ptxas -arch=sm_90a -v %t.90a.13.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: %ptxas -arch=sm_90a -v %t.90a.16.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS,WIDE
// RUN: FileCheck %s --check-prefix=FUSED < %t.90a.7.ptx
// RUN: lamina-opt %s --lamina-generate-backward "--lamina-gpu-pipeline=chip=sm_80" > %t.80.mlir
// RUN: %python %lamina_src/utils/extract-ptx.py %t.80.mlir %t.80 | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_80 -v %t.80.7.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.10.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.13.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS
// RUN: %ptxas -arch=sm_80 -v %t.80.16.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefixes=PTXAS

// COUNT: 17 PTX modules

// PTXAS-NOT:  C75{{[0-9][0-9]}}
// PTXAS:      0 bytes spill stores, 0 bytes spill loads
// WIDE-NEXT:  Used 168 registers
// PTXAS-NOT:  C75{{[0-9][0-9]}}

// dH = (dY·W2)·gelu′(p1): wgmma, then p1 read in pairs in the epilogue.
// FUSED: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// FUSED: ld.global.v2.b16
// FUSED: cvt.rn.bf16x2.f32

func.func @main(%x: tensor<256x1024xbf16>, %w1: tensor<4096x1024xbf16>, %b1: tensor<4096xbf16>, %w2: tensor<1024x4096xbf16>, %b2: tensor<1024xbf16>) -> tensor<256x1024xbf16> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  %y = lamina.linear "fc2" %h, %w2 bias %b2 : (tensor<256x4096xbf16>, tensor<1024x4096xbf16>, tensor<1024xbf16>) -> tensor<256x1024xbf16>
  return %y : tensor<256x1024xbf16>
}
