// RUN: lamina-opt %s --lamina-generate-backward -split-input-file -verify-diagnostics

// The Megatron MLP, whose backward layouts are right: each rank holds a
// block of the weights, so differentiating whole tensors would be wrong;
// the pass refuses until tensor-parallel backward is generated.
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op shards argument 1 (#lamina.layout<S(0)>): backward generation for tensor-parallel programs is not available; differentiate the program of one rank}}
  func.func @main(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %0 = lamina.linear "fc1" %s, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
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
