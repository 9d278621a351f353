// RUN: lamina-opt %s --lamina-check-gradient-layouts -split-input-file -verify-diagnostics

// The backward walks a called function from its call: fc1's partial input
// gradient inside the block, without a bwd_post all-reduce, reaches the
// program's input through the call.
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'h.0.fc1'; add sync("bwd_post", "all_reduce") on the input of layer 'h.0.fc1'}}
  func.func @missing_sync(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %h = func.call @mlp_block(%x, %w1, %w2) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %h : tensor<4x8xf32>
  }
  func.func private @mlp_block(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>,
      %w2: tensor<8x16xf32>) -> tensor<4x8xf32> {
    %0 = lamina.matmul "h.0.fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.matmul "h.0.fc2" %0, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %2 = lamina.sync "h.0.fc2" %1 <fwd_post, all_reduce> : tensor<4x8xf32>
    return %2 : tensor<4x8xf32>
  }
}

// -----

// A gather that leaves its transpose open, in a function called twice: one
// call's result gradient is whole (returned), the other's partial sums (a
// column-parallel head reads it). The function is partitioned once, so its
// sync cannot transpose both ways.
module attributes {lamina.world_size = 2 : i64} {
  func.func @two_transposes(
      %x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %y: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w: tensor<32x16xf32> {lamina.layout = #lamina.layout<S(0)>}) -> (tensor<4x16xf32>, tensor<4x32xf32>) {
    // expected-error @+1 {{'func.call' op needs a sync of @gather to transpose as #lamina.sync<fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false>, but another call needs #lamina.sync<fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = true>; a called function is partitioned once: write the sync's tensor_parallel_output_grad}}
    %a = func.call @gather(%x) {lamina.module = "h.0"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = func.call @gather(%y) {lamina.module = "h.1"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = lamina.matmul "head" %b, %w : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
    %g = lamina.sync "head" %m <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false> : tensor<4x32xf32>
    return %a, %g : tensor<4x16xf32>, tensor<4x32xf32>
  }
  func.func private @gather(%v: tensor<4x16xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{the sync}}
    %0 = lamina.sync "h.0.g" %v <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}
