// RUN: lamina-opt %s --lamina-cpu-pipeline=vector-bits=256 | FileCheck %s
// RUN: lamina-opt %s --lamina-cpu-pipeline="threads=1 vector-bits=256" | FileCheck %s

// The whole program reaches the LLVM dialect; the result becomes an
// out-parameter; GELU's tanh is a polynomial (no libm call); bf16 rounding
// and strided copies need no runtime library.
// CHECK: llvm.func @main(
// CHECK-NOT: lamina.
// CHECK-NOT: linalg.
// CHECK-NOT: tanhf
// CHECK-NOT: __truncsfbf2
// CHECK-NOT: memrefCopy
// CHECK: llvm.return
func.func @main(%x: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> tensor<2x4x16xbf16> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
  return %0 : tensor<2x4x16xbf16>
}

// RUN: lamina-opt %s --lamina-cpu-pipeline="threads=2 vector-bits=256" | FileCheck %s --check-prefix=THREADS
// THREADS: llvm.func @big(
// THREADS: omp.parallel num_threads
// THREADS: omp.wsloop
func.func @big(%x: tensor<512x256xf32>, %w: tensor<512x256xf32>, %b: tensor<512xf32>) -> tensor<512x512xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<512x256xf32>, tensor<512x256xf32>, tensor<512xf32>) -> tensor<512x512xf32>
  return %0 : tensor<512x512xf32>
}
