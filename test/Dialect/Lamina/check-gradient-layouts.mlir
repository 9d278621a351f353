// RUN: lamina-opt %s --lamina-check-gradient-layouts --split-input-file | FileCheck %s

// The Megatron MLP with a residual: fc1's input gradient is partial (its
// weight is S(0)) until the bwd_post all-reduce; the residual then adds two
// whole gradients. Accepted, the program unchanged.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK: lamina.sync "fc1" %{{.*}} <bwd_post, all_reduce>
module attributes {lamina.world_size = 2 : i64} {
  func.func @megatron_mlp(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %0 = lamina.linear_act "fc1" %s, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> bias %b2 : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %2 = arith.addf %x, %1 : tensor<4x8xf32>
    return %2 : tensor<4x8xf32>
  }
}

// -----

// Sequence parallel: the LayerNorm runs on S(1) tokens, so its replicated
// weight gets a partial gradient, which is legal for a parameter (it is
// all-reduced with the parameter gradients); the fwd_pre all-gather
// transposes to a reduce-scatter of fc1's partial input gradient.
// CHECK-LABEL: func.func @sequence_parallel
module attributes {lamina.world_size = 2 : i64} {
  func.func @sequence_parallel(
      %x: tensor<2x8x4xf32> {lamina.layout = #lamina.layout<S(1)>},
      %g: tensor<4xf32>,
      %w1: tensor<16x4xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x8x4xf32> {
    %n = lamina.layer_norm "ln" %x weight %g eps 1.0e-05 : (tensor<2x8x4xf32>, tensor<4xf32>) -> tensor<2x8x4xf32>
    %a = lamina.sync "fc1" %n <fwd_pre, all_gather, axis = 1> : tensor<2x8x4xf32>
    %h = lamina.linear "fc1" %a, %w1 : (tensor<2x8x4xf32>, tensor<16x4xf32>) -> tensor<2x8x16xf32>
    %y = lamina.linear_sync "fc2" %h, %w2 sync <fwd_post, reduce_scatter, axis = 1> : (tensor<2x8x16xf32>, tensor<4x16xf32>) -> tensor<2x8x4xf32>
    return %y : tensor<2x8x4xf32>
  }
}

// -----

// One rank: nothing to check.
// CHECK-LABEL: func.func @one_rank
module attributes {lamina.world_size = 1 : i64} {
  func.func @one_rank(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %y = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// A replicated value used beside values sharded by heads and on its own:
// the blocks of its gradient from the sharded use are gathered back whole,
// so the two contributions add up (both R). Accepted.
// CHECK-LABEL: func.func @replicated_beside_sharded
module attributes {lamina.world_size = 2 : i64} {
  func.func @replicated_beside_sharded(%s: tensor<2x4x4xf32> {lamina.layout = #lamina.layout<S(1)>}, %c: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32> {lamina.layout = #lamina.layout<S(1)>}, tensor<2x4x4xf32>) {
    %r = arith.mulf %s, %c : tensor<2x4x4xf32>
    %t = arith.mulf %c, %c : tensor<2x4x4xf32>
    return %r, %t : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  }
}
