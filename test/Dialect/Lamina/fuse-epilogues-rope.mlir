// RUN: lamina-opt %s --lamina-fuse-epilogues=rope=true --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse-epilogues --split-input-file | FileCheck %s --check-prefix=OFF

// LLaMA's queries: the projection viewed as [batch, seq, heads, head_dim]
// and rotated in interleaved pairs becomes one fused_linear with the rope
// epilogue, viewed as the rope was.
// CHECK-LABEL: func.func @queries
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x128xf32>, %[[W:.+]]: tensor<128x128xf32>, %[[COS:.+]]: tensor<1x16x1x16xf32>, %[[SIN:.+]]: tensor<1x16x1x16xf32>)
// CHECK: %[[F:.+]] = lamina.fused_linear "wq" %[[X]], %[[W]] rope %[[COS]], %[[SIN]] : (tensor<2x16x128xf32>, tensor<128x128xf32>, tensor<1x16x1x16xf32>, tensor<1x16x1x16xf32>) -> tensor<2x16x128xf32>
// CHECK: %[[V:.+]] = tensor.expand_shape %[[F]] {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 4, 32] : tensor<2x16x128xf32> into tensor<2x16x4x32xf32>
// CHECK-NOT: lamina.rope
// CHECK: return %[[V]]
// Without the option, the rope stays an op of its own.
// OFF-LABEL: func.func @queries
// OFF: lamina.matmul
// OFF: lamina.rope
func.func @queries(%x: tensor<2x16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<1x16x1x16xf32>, %sin: tensor<1x16x1x16xf32>) -> tensor<2x16x4x32xf32> {
  %0 = lamina.matmul "wq" %x, %w : (tensor<2x16x128xf32>, tensor<128x128xf32>) -> tensor<2x16x128xf32>
  %1 = tensor.expand_shape %0 [[0], [1], [2, 3]] output_shape [2, 16, 4, 32] : tensor<2x16x128xf32> into tensor<2x16x4x32xf32>
  %2 = lamina.rope "attention" %1, %cos, %sin interleaved : tensor<2x16x4x32xf32>, tensor<1x16x1x16xf32>
  return %2 : tensor<2x16x4x32xf32>
}

// -----

// Rotated halves (rotate_half) pair features half a head apart, in other
// blocks: the rope stays apart.
// CHECK-LABEL: func.func @halves
// CHECK: lamina.matmul
// CHECK: lamina.rope
func.func @halves(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<16x1x16xf32>, %sin: tensor<16x1x16xf32>) -> tensor<16x4x32xf32> {
  %0 = lamina.matmul "wq" %x, %w : (tensor<16x128xf32>, tensor<128x128xf32>) -> tensor<16x128xf32>
  %1 = tensor.expand_shape %0 [[0], [1, 2]] output_shape [16, 4, 32] : tensor<16x128xf32> into tensor<16x4x32xf32>
  %2 = lamina.rope %1, %cos, %sin halves : tensor<16x4x32xf32>, tensor<16x1x16xf32>
  return %2 : tensor<16x4x32xf32>
}

// -----

// The projection's value is used unrotated too (a second use of the view):
// nothing is fused.
// CHECK-LABEL: func.func @second_use
// CHECK: lamina.matmul
// CHECK: lamina.rope
func.func @second_use(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<16x1x16xf32>, %sin: tensor<16x1x16xf32>) -> (tensor<16x4x32xf32>, tensor<16x4x32xf32>) {
  %0 = lamina.matmul "wq" %x, %w : (tensor<16x128xf32>, tensor<128x128xf32>) -> tensor<16x128xf32>
  %1 = tensor.expand_shape %0 [[0], [1, 2]] output_shape [16, 4, 32] : tensor<16x128xf32> into tensor<16x4x32xf32>
  %2 = lamina.rope %1, %cos, %sin interleaved : tensor<16x4x32xf32>, tensor<16x1x16xf32>
  return %1, %2 : tensor<16x4x32xf32>, tensor<16x4x32xf32>
}

// -----

// A bias before the rotation is an epilogue of its own kind: the bias is
// fused, the rope stays apart.
// CHECK-LABEL: func.func @biased
// CHECK: lamina.fused_linear "wq" %{{.*}}, %{{.*}} bias
// CHECK: lamina.rope
func.func @biased(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %b: tensor<128xf32>, %cos: tensor<16x1x16xf32>, %sin: tensor<16x1x16xf32>) -> tensor<16x4x32xf32> {
  %0 = lamina.matmul "wq" %x, %w : (tensor<16x128xf32>, tensor<128x128xf32>) -> tensor<16x128xf32>
  %1 = lamina.bias_add "wq" %0, %b : tensor<16x128xf32>, tensor<128xf32>
  %2 = tensor.expand_shape %1 [[0], [1, 2]] output_shape [16, 4, 32] : tensor<16x128xf32> into tensor<16x4x32xf32>
  %3 = lamina.rope %2, %cos, %sin interleaved : tensor<16x4x32xf32>, tensor<16x1x16xf32>
  return %3 : tensor<16x4x32xf32>
}
