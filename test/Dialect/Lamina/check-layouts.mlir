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

// -----

// LayerNorm normalizes each row on its own: a value sharded on a batch axis
// (the tokens here) stays sharded through it, and so does softmax along
// another axis than the sharded one.
// CHECK-LABEL: func.func @layer_norm_batch_sharded
// CHECK: lamina.layer_norm "ln" %{{.*}} weight %{{.*}} bias %{{.*}} eps
// CHECK: lamina.softmax %{{.*}} dim 2
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_batch_sharded(%x: tensor<4x8x16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x8x16xf32> {
    %0 = lamina.layer_norm "ln" %x weight %w bias %b eps 1.0e-05 : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %1 = lamina.softmax %0 dim 2 : tensor<4x8x16xf32>
    return %1 : tensor<4x8x16xf32>
  }
}

// -----

// Megatron sequence parallelism: LayerNorm runs on the tokens sharded on
// axis 1, the column-parallel layer all-gathers them first.
// CHECK-LABEL: func.func @sequence_parallel_layer_norm
// CHECK: lamina.layer_norm "ln_1"
// CHECK: lamina.sync %{{.*}} <fwd_pre, all_gather, axis = 1>
module attributes {lamina.world_size = 2 : i64} {
  func.func @sequence_parallel_layer_norm(%x: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>},
      %g: tensor<8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x4x8xf32> {
    %n = lamina.layer_norm "ln_1" %x weight %g eps 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %s = lamina.sync %n <fwd_pre, all_gather, axis = 1> : tensor<2x4x8xf32>
    %0 = lamina.linear "fc1" %s, %w1 : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, reduce_scatter, axis = 1> : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
    %2 = arith.addf %x, %1 : tensor<2x4x8xf32>
    return %2 : tensor<2x4x8xf32>
  }
}

// -----

// Attention weights sharded by heads (axis 1): softmax along the keys.
// CHECK-LABEL: func.func @softmax_heads_sharded
// CHECK: lamina.softmax "attn" %{{.*}} dim 3
module attributes {lamina.world_size = 2 : i64} {
  func.func @softmax_heads_sharded(%scores: tensor<2x4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x4x8x8xf32> {
    %0 = lamina.softmax "attn" %scores dim 3 : tensor<2x4x8x8xf32>
    return %0 : tensor<2x4x8x8xf32>
  }
}

// -----

// After the fc2 all-reduce the value is whole again: LayerNorm may follow.
// CHECK-LABEL: func.func @layer_norm_after_all_reduce
// CHECK: lamina.layer_norm "ln_2"
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_after_all_reduce(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear_sync "fc2" %h, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %1 = lamina.layer_norm "ln_2" %0 weight %g bias %b eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}
