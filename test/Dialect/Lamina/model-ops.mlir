// RUN: lamina-opt %s | lamina-opt | FileCheck %s
// RUN: lamina-opt %s --mlir-print-op-generic | lamina-opt | FileCheck %s

// CHECK-LABEL: func.func @embedding
func.func @embedding(%idx: tensor<2x8xi64>, %w: tensor<64x32xf32>, %dy: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<64x32xf32>) {
  // CHECK: lamina.embedding "transformer.wte" %{{.*}}, %{{.*}} : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  %0 = lamina.embedding "transformer.wte" %idx, %w : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: lamina.embedding "pad" %{{.*}}, %{{.*}} padding_idx 0 : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  %1 = lamina.embedding "pad" %idx, %w padding_idx 0 : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: lamina.embedding_grad %{{.*}}, %{{.*}} padding_idx 0 : (tensor<2x8xi64>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
  %2 = lamina.embedding_grad %idx, %dy padding_idx 0 : (tensor<2x8xi64>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
  return %0, %1, %2 : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<64x32xf32>
}

// CHECK-LABEL: func.func @masked_fill
func.func @masked_fill(%s: tensor<2x4x8x8xf32>, %m: tensor<1x1x8x8xi1>) -> tensor<2x4x8x8xf32> {
  // CHECK: lamina.masked_fill "h.0.attn" %{{.*}}, %{{.*}} value 0xFFF0000000000000 : tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1>
  %0 = lamina.masked_fill "h.0.attn" %s, %m value 0xFFF0000000000000 : tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1>
  return %0 : tensor<2x4x8x8xf32>
}

// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%x: tensor<16x64xf32>, %t: tensor<16xi64>, %dl: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<16x64xf32>) {
  // CHECK: lamina.cross_entropy %{{.*}}, %{{.*}} ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  %0 = lamina.cross_entropy %x, %t ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  // CHECK: lamina.cross_entropy %{{.*}}, %{{.*}} ignore_index -100 sum : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  %1 = lamina.cross_entropy %x, %t ignore_index -100 sum : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  // CHECK: lamina.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x64xf32>
  %2 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x64xf32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<16x64xf32>
}

// Vocabulary parallel: a rank's block of the classes.
// CHECK-LABEL: func.func @cross_entropy_vocabulary_parallel
func.func @cross_entropy_vocabulary_parallel(%x: tensor<16x32xf32>, %t: tensor<16xi64>, %dl: tensor<f32>, %r: index) -> (tensor<f32>, tensor<16x32xf32>) {
  // CHECK: lamina.cross_entropy %{{.*}}, %{{.*}} ignore_index -1 shards 2 rank %{{.*}} : (tensor<16x32xf32>, tensor<16xi64>, index) -> tensor<f32>
  %0 = lamina.cross_entropy %x, %t ignore_index -1 shards 2 rank %r : (tensor<16x32xf32>, tensor<16xi64>, index) -> tensor<f32>
  // CHECK: lamina.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index -1 shards 2 rank %{{.*}} : (tensor<16x32xf32>, tensor<16xi64>, tensor<f32>, index) -> tensor<16x32xf32>
  %1 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 shards 2 rank %r : (tensor<16x32xf32>, tensor<16xi64>, tensor<f32>, index) -> tensor<16x32xf32>
  return %0, %1 : tensor<f32>, tensor<16x32xf32>
}

// CHECK-LABEL: func.func @cross_entropy_per_row
func.func @cross_entropy_per_row(%x: tensor<16x64xf32>, %t: tensor<16xi64>, %dl: tensor<16xf32>) -> (tensor<16xf32>, tensor<16x64xf32>) {
  // CHECK: lamina.cross_entropy %{{.*}}, %{{.*}} ignore_index -100 none : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<16xf32>
  %0 = lamina.cross_entropy %x, %t ignore_index -100 none : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<16xf32>
  // CHECK: lamina.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index -100 none : (tensor<16x64xf32>, tensor<16xi64>, tensor<16xf32>) -> tensor<16x64xf32>
  %1 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -100 none : (tensor<16x64xf32>, tensor<16xi64>, tensor<16xf32>) -> tensor<16x64xf32>
  return %0, %1 : tensor<16xf32>, tensor<16x64xf32>
}

// CHECK-LABEL: func.func @rope
func.func @rope(%q: tensor<2x16x4x32xf32>, %cos: tensor<1x16x1x16xf32>, %sin: tensor<1x16x1x16xf32>, %k: tensor<2x4x16x32xf32>, %c2: tensor<1x1x16x16xf32>, %s2: tensor<1x1x16x16xf32>) -> (tensor<2x16x4x32xf32>, tensor<2x4x16x32xf32>) {
  // CHECK: lamina.rope "h.0.attn" %{{.*}}, %{{.*}}, %{{.*}} interleaved : tensor<2x16x4x32xf32>, tensor<1x16x1x16xf32>
  %0 = lamina.rope "h.0.attn" %q, %cos, %sin interleaved : tensor<2x16x4x32xf32>, tensor<1x16x1x16xf32>
  // CHECK: lamina.rope %{{.*}}, %{{.*}}, %{{.*}} halves : tensor<2x4x16x32xf32>, tensor<1x1x16x16xf32>
  %1 = lamina.rope %k, %c2, %s2 halves : tensor<2x4x16x32xf32>, tensor<1x1x16x16xf32>
  return %0, %1 : tensor<2x16x4x32xf32>, tensor<2x4x16x32xf32>
}
