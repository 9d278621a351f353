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
