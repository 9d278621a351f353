// RUN: lamina-opt %s --lamina-partition --split-input-file | FileCheck %s

// The Megatron MLP: fc1 column parallel, fc2 row parallel with its
// all-reduce between the matmul and the bias.
// CHECK-LABEL: module attributes {lamina.partitioned, lamina.world_size = 2 : i64}
// CHECK: shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W1:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[B1:.+]]: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %[[B2:.+]]: tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H:.+]] = lamina.matmul "fc1" %[[X]], %[[W1]] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[HB:.+]] = lamina.bias_add "fc1" %[[H]], %[[B1]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: %[[G:.+]] = lamina.activation "fc1" gelu_tanh %[[HB]] : tensor<4x8xf32>
// CHECK: %[[Y:.+]] = lamina.matmul "fc2" %[[G]], %[[W2]] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.+]] = shard.all_reduce %[[Y]] on @lamina_grid grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[O:.+]] = lamina.bias_add "fc2" %[[R]], %[[B2]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: return %[[O]] : tensor<4x8xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @megatron_mlp(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.sync "fc1" %0 <bwd_post, all_reduce> : tensor<4x16xf32>
    %2 = lamina.bias_add "fc1" %1, %b1 : tensor<4x16xf32>, tensor<16xf32>
    %3 = lamina.activation "fc1" gelu_tanh %2 : tensor<4x16xf32>
    %4 = lamina.matmul "fc2" %3, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %5 = lamina.sync "fc2" %4 <fwd_post, all_reduce> : tensor<4x8xf32>
    %6 = lamina.bias_add "fc2" %5, %b2 : tensor<4x8xf32>, tensor<8xf32>
    return %6 : tensor<4x8xf32>
  }
}

// -----

// Sequence parallel on 4 ranks: tokens sharded on axis 0, all-gathered into
// fc1, reduce-scattered out of fc2; the result stays sharded, and its
// dropout draws by index in the whole tensor.
// CHECK-LABEL: func.func @sequence_parallel
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[S:.+]]: i64, %[[W1:.+]]: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2:.+]]: tensor<8x4xf32> {lamina.layout = #lamina.layout<S(1)>}) -> (tensor<2x8xf32> {lamina.layout = #lamina.layout<S(0)>})
// CHECK: %[[RANK:.+]] = shard.process_linear_index on @lamina_grid : index
// CHECK: %[[XG:.+]] = shard.all_gather %[[X]] on @lamina_grid grid_axes = [0] gather_axis = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK: lamina.matmul "fc1" %[[XG]], %[[W1]] : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK: %[[Y:.+]] = lamina.matmul "fc2"
// CHECK-SAME: -> tensor<8x8xf32>
// CHECK: %[[RS:.+]] = shard.reduce_scatter %[[Y]] on @lamina_grid grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK: lamina.dropout "drop" %[[RS]] <p = 0.1, training, shard_axis = 0, shards = 4> seed %[[S]] rank %[[RANK]] : tensor<2x8xf32>
module attributes {lamina.world_size = 4 : i64} {
  func.func @sequence_parallel(
      %x: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %seed: i64,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<8x8xf32> {
    %0 = lamina.sync "fc1" %x <fwd_pre, all_gather, axis = 0> : tensor<8x8xf32>
    %1 = lamina.matmul "fc1" %0, %w1 : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
    %2 = lamina.activation "fc1" relu %1 : tensor<8x16xf32>
    %3 = lamina.matmul "fc2" %2, %w2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %4 = lamina.sync "fc2" %3 <fwd_post, reduce_scatter, axis = 0> : tensor<8x8xf32>
    %5 = lamina.dropout "drop" %4 <p = 0.1, training> seed %seed : tensor<8x8xf32>
    return %5 : tensor<8x8xf32>
  }
}

// -----

// Slapo's scatter keeps each rank's block; a fork_rng dropout takes the
// rank that keys its stream; a replicated dropout is left as it is.
// CHECK-LABEL: func.func @scatter_and_fork
// CHECK: %[[RANK:.+]] = shard.process_linear_index on @lamina_grid : index
// CHECK: %[[R:.+]] = lamina.dropout %{{.*}} <p = 0.5, training> seed %{{.*}} : tensor<4x8xf32>
// CHECK-NOT: rank
// CHECK: %[[SL:.+]] = shard.all_slice %[[R]] on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: lamina.dropout %[[SL]] <p = 0.5, training, offset = 1, fork_rng> seed %{{.*}} rank %[[RANK]] : tensor<4x4xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @scatter_and_fork(%x: tensor<4x8xf32>, %seed: i64) -> tensor<4x8xf32> {
    %0 = lamina.dropout %x <p = 0.5, training> seed %seed : tensor<4x8xf32>
    %1 = lamina.sync %0 <fwd_post, scatter, axis = 1> : tensor<4x8xf32>
    %2 = lamina.dropout %1 <p = 0.5, training, offset = 1, fork_rng> seed %seed : tensor<4x8xf32>
    %3 = lamina.sync %2 <fwd_post, all_gather, axis = 1> : tensor<4x8xf32>
    return %3 : tensor<4x8xf32>
  }
}

// -----

// A fused QKV sharded by heads computes num_heads / world_size heads, and
// the merge of heads keeps them sharded into the row-parallel projection.
// CHECK-LABEL: func.func @attention
// CHECK: lamina.fused_qkv "qkv" %{{.*}}, %{{.*}} bias %{{.*}} num_heads 4 world_size 2 : (tensor<2x3x16xf32>, tensor<24x16xf32>, tensor<24xf32>) -> (tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>)
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x3x2x4xf32> into tensor<2x3x8xf32>
// CHECK: lamina.matmul "out" %{{.*}}, %{{.*}} : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
// CHECK: shard.all_reduce
module attributes {lamina.world_size = 2 : i64} {
  func.func @attention(%x: tensor<2x3x16xf32>,
      %wqkv: tensor<48x16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %bqkv: tensor<48xf32> {lamina.layout = #lamina.layout<S(0)>},
      %wo: tensor<16x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x3x16xf32> {
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %wqkv bias %bqkv num_heads 4 world_size 1 : (tensor<2x3x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>)
    %a = arith.addf %q, %v : tensor<2x3x4x4xf32>
    %m = tensor.collapse_shape %a [[0], [1], [2, 3]] : tensor<2x3x4x4xf32> into tensor<2x3x16xf32>
    %0 = lamina.matmul "out" %m, %wo : (tensor<2x3x16xf32>, tensor<16x16xf32>) -> tensor<2x3x16xf32>
    %1 = lamina.sync "out" %0 <fwd_post, all_reduce> : tensor<2x3x16xf32>
    return %1 : tensor<2x3x16xf32>
  }
}

// -----

// A program of one rank is left alone.
// CHECK-LABEL: func.func @one_rank
// CHECK-NOT: shard.
// CHECK: lamina.sync
module attributes {lamina.world_size = 1 : i64} {
  func.func @one_rank(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.sync %x <fwd_post, all_reduce> : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// LayerNorm and softmax on tokens sharded on axis 0 over 2 ranks: each rank
// normalizes its 2 of the 4 rows; the weight and bias stay whole.
// CHECK-LABEL: func.func @layer_norm_batch_sharded
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x16xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W:.+]]: tensor<16xf32>, %[[B:.+]]: tensor<16xf32>) -> (tensor<2x8x16xf32> {lamina.layout = #lamina.layout<S(0)>})
// CHECK: %[[N:.+]] = lamina.layer_norm "ln" %[[X]] weight %[[W]] bias %[[B]] eps 1.000000e-05 : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[P:.+]] = lamina.softmax %[[N]] dim 2 : tensor<2x8x16xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return %[[P]] : tensor<2x8x16xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_batch_sharded(%x: tensor<4x8x16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x8x16xf32> {
    %0 = lamina.layer_norm "ln" %x weight %w bias %b eps 1.0e-05 : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %1 = lamina.softmax %0 dim 2 : tensor<4x8x16xf32>
    return %1 : tensor<4x8x16xf32>
  }
}

// -----

// Sequence parallel over 4 ranks: LayerNorm on the rank's 2 of 8 tokens,
// then the gather into the column-parallel layer.
// CHECK-LABEL: func.func @sequence_parallel_layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x2x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %[[G:.+]]: tensor<8xf32>, %[[W1:.+]]: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>})
// CHECK: %[[N:.+]] = lamina.layer_norm "ln_1" %[[X]] weight %[[G]] eps 1.000000e-05 : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
// CHECK: %[[XG:.+]] = shard.all_gather %[[N]] on @lamina_grid grid_axes = [0] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x8x8xf32>
// CHECK: lamina.matmul "fc1" %[[XG]], %[[W1]] : (tensor<2x8x8xf32>, tensor<4x8xf32>) -> tensor<2x8x4xf32>
module attributes {lamina.world_size = 4 : i64} {
  func.func @sequence_parallel_layer_norm(%x: tensor<2x8x8xf32> {lamina.layout = #lamina.layout<S(1)>},
      %g: tensor<8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<2x8x16xf32> {
    %n = lamina.layer_norm "ln_1" %x weight %g eps 1.0e-05 : (tensor<2x8x8xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
    %s = lamina.sync %n <fwd_pre, all_gather, axis = 1> : tensor<2x8x8xf32>
    %0 = lamina.matmul "fc1" %s, %w1 : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
    %1 = lamina.sync %0 <fwd_post, all_gather, axis = 2> : tensor<2x8x16xf32>
    return %1 : tensor<2x8x16xf32>
  }
}

// -----

// Softmax of attention weights sharded by heads (axis 1 of 4 over 2 ranks)
// along the keys.
// CHECK-LABEL: func.func @softmax_heads_sharded
// CHECK-SAME: (%[[S:.+]]: tensor<2x2x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> (tensor<2x2x8x8xf32> {lamina.layout = #lamina.layout<S(1)>})
// CHECK: lamina.softmax "attn" %[[S]] dim 3 : tensor<2x2x8x8xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @softmax_heads_sharded(%scores: tensor<2x4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x4x8x8xf32> {
    %0 = lamina.softmax "attn" %scores dim 3 : tensor<2x4x8x8xf32>
    return %0 : tensor<2x4x8x8xf32>
  }
}

// -----

// A head sharded by vocabulary and its loss, not gathered (Megatron's and
// Slapo's ParallelCrossEntropy): each rank keeps its [4, 8] block of the
// [4, 16] logits, and the loss becomes vocabulary parallel on that block.
// CHECK-LABEL: func.func @vocabulary_parallel_loss
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<4xi64>
// CHECK: %[[RANK:.+]] = shard.process_linear_index on @lamina_grid : index
// CHECK: %[[Y:.+]] = lamina.matmul "head" %{{.+}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[L:.+]] = lamina.cross_entropy %[[Y]], %[[T]] ignore_index -1 shards 2 rank %[[RANK]] : (tensor<4x8xf32>, tensor<4xi64>, index) -> tensor<f32>
// CHECK: return %[[L]] : tensor<f32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @vocabulary_parallel_loss(%x: tensor<4x8xf32>, %t: tensor<4xi64>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<f32> {
    %y = lamina.matmul "head" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %l = lamina.cross_entropy %y, %t ignore_index -1 : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
