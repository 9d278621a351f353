// RUN: lamina-opt %s --convert-lamina-to-linalg --split-input-file -verify-diagnostics

module attributes {lamina.world_size = 2 : i64} {
  func.func @unpartitioned(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    // expected-error @+1 {{sync point in a program of world size 2 must be partitioned into collectives before lowering}}
    %0 = lamina.sync %x <fwd_post, all_reduce> : tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_sync(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    // expected-error @+1 {{sync point in a program of world size 2 must be partitioned into collectives before lowering}}
    %0 = lamina.linear_sync "fc" %x, %w sync <fwd_post, all_reduce> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

// A vocabulary-parallel loss written by hand, with no grid to reduce over.
func.func @loss_without_grid(%x: tensor<16x32xf32>, %t: tensor<16xi64>, %r: index) -> tensor<f32> {
  // expected-error @+1 {{'lamina.cross_entropy' op is vocabulary parallel, but there is no @lamina_grid grid to all-reduce over (lamina-partition makes it)}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 shards 2 rank %r : (tensor<16x32xf32>, tensor<16xi64>, index) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A layout asking for row panels of an input that is not a transpose (a
// hand-written layout; lamina-select-cpu-strategy asks only for
// transposes).
func.func @panels_of_no_transpose(%x: tensor<8x4xf32>, %w: tensor<32x4xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{row_panel 4 packs a transposed input, but the input is not a linalg.transpose of a 2-D tensor}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, row_panel = 4, accumulator = f32>} : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}
