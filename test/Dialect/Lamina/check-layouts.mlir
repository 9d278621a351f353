// RUN: lamina-opt %s --lamina-check-layouts --split-input-file | FileCheck %s

// The Megatron MLP: column-parallel fc1 (weight and bias S(0)), row-parallel
// fc2 (weight S(1)) with the all-reduce between its matmul and its bias.
// CHECK-LABEL: func.func @megatron_mlp
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

// Attention: fused QKV sharded by heads, row-parallel output projection.
// CHECK-LABEL: func.func @attention
module attributes {lamina.world_size = 2 : i64} {
  func.func @attention(%x: tensor<2x32xf32>,
      %wq: tensor<96x32xf32> {lamina.layout = #lamina.layout<S(0)>},
      %bq: tensor<96xf32> {lamina.layout = #lamina.layout<S(0)>},
      %wo: tensor<32x32xf32> {lamina.layout = #lamina.layout<S(1)>},
      %bo: tensor<32xf32>) -> tensor<2x32xf32> {
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %wq bias %bq num_heads 4 world_size 2 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    %m = arith.mulf %q, %v : tensor<2x4x8xf32>
    %c = tensor.collapse_shape %m [[0], [1, 2]] : tensor<2x4x8xf32> into tensor<2x32xf32>
    %o = lamina.linear_sync "out" %c, %wo sync <fwd_post, all_reduce> bias %bo : (tensor<2x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x32xf32>
    return %o : tensor<2x32xf32>
  }
}

// -----

// Sequence parallel: the input sharded on the sequence axis is gathered
// before the column-parallel layer; the row-parallel layer reduce-scatters.
// CHECK-LABEL: func.func @sequence_parallel
module attributes {lamina.world_size = 2 : i64} {
  func.func @sequence_parallel(%x: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x4x8xf32> {
    %g = lamina.sync %x <fwd_pre, all_gather, axis = 1> : tensor<2x4x8xf32>
    %0 = lamina.linear "fc1" %g, %w1 : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, reduce_scatter, axis = 1> : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
    return %1 : tensor<2x4x8xf32>
  }
}
