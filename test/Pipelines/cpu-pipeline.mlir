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

// A result computed through loops (a tiled transpose threads its buffer
// through them) is written straight into the out-parameter: no allocation,
// no copy of the whole result afterwards.
// RUN: lamina-opt %s --lamina-cpu-pipeline=vector-bits=256 --mlir-print-ir-after=buffer-results-to-out-params 2>&1 >/dev/null | FileCheck %s --check-prefix=INPLACE
// INPLACE-LABEL: func.func @packed(
// INPLACE-SAME: %[[OUT:[a-z0-9]+]]: memref<256x1024x16xf32>)
// INPLACE-NOT: memref.alloc
// INPLACE-NOT: memref.copy
// INPLACE: vector.transfer_write {{.*}}, %[[OUT]]
// INPLACE-NOT: memref.copy
// INPLACE: return
func.func @packed(%w: tensor<1024x4096xf32>) -> tensor<256x1024x16xf32> {
  %s = tensor.expand_shape %w [[0], [1, 2]] output_shape [1024, 256, 16] : tensor<1024x4096xf32> into tensor<1024x256x16xf32>
  %e = tensor.empty() : tensor<256x1024x16xf32>
  %t = linalg.transpose ins(%s : tensor<1024x256x16xf32>) outs(%e : tensor<256x1024x16xf32>) permutation = [1, 0, 2]
  return %t : tensor<256x1024x16xf32>
}

// A matmul without epilogue computes its result packed, [M, N/16, 16], and
// returns it reshaped to [M, N]: that too is written straight into the
// out-parameter.
// INPLACE-LABEL: func.func @matmul_only(
// INPLACE-SAME: %[[Y:[a-z0-9]+]]: memref<64x64xf32>)
// INPLACE-NOT: memref.alloc()
// INPLACE-NOT: memref.copy
// INPLACE: %[[VIEW:.+]] = memref.expand_shape %[[Y]] {{\[}}[0], [1, 2]]
// INPLACE-NOT: memref.copy
// INPLACE: memref.subview %[[VIEW]]
// INPLACE-NOT: memref.copy
// INPLACE: return
func.func @matmul_only(%x: tensor<64x32xf32>, %w: tensor<64x32xf32>) -> tensor<64x64xf32> {
  %y = lamina.linear "fc" %x, %w : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
