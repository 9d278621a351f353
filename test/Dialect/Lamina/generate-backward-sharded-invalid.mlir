// RUN: lamina-opt %s --lamina-generate-backward -split-input-file -verify-diagnostics

// A program already partitioned: its layers and layouts, which the
// backward's checks need, are gone.
module attributes {lamina.world_size = 2 : i64, lamina.partitioned} {
  // expected-error @+1 {{'func.func' op is already partitioned; lamina-generate-backward takes the sharded program before lamina-partition (it partitions it itself)}}
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// A schedule whose backward would be wrong is reported as such first: the
// Megatron MLP without fc1's bwd_post sync.
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'fc1'; add sync("bwd_post", "all_reduce") on the input of layer 'fc1'}}
  func.func @main(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}
