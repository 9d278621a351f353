// RUN: lamina-opt %s --lamina-check-layouts --split-input-file -verify-diagnostics

// The Megatron MLP with its fc2 all-reduce removed: the bias would be added
// on every rank (Slapo's double-bias bug).
module attributes {lamina.world_size = 2 : i64} {
  func.func @missing_all_reduce(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    // expected-error @+1 {{adds its bias to partial sums (layout P) of layer 'fc2': every rank would add it once more (Slapo's double-bias bug); add a fwd_post all_reduce sync between the matmul and the bias}}
    %1 = lamina.linear "fc2" %0, %w2 bias %b2 : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @return_partial(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %1 = lamina.linear "fc2" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{returns partial sums (layout P) as result 0; add a fwd_post all_reduce sync before returning}}
    return %1 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @activation_on_partial(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc2" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{applies an activation to partial sums (layout P) of the value; add a fwd_post all_reduce (or reduce_scatter) sync before it}}
    %1 = lamina.activation relu %0 : tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @residual_on_partial(%x: tensor<4x8xf32>, %h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc2" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{receives partial sums (layout P); only a sync or another linear layer's reduction may take them: add a fwd_post all_reduce before it}}
    %1 = arith.addf %x, %0 : tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @gather_unsharded(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{sync #lamina.sync<fwd_pre, all_gather, axis = 1> on the value needs a value sharded on axis 1, but its input has layout #lamina.layout<R>}}
    %0 = lamina.sync %x <fwd_pre, all_gather, axis = 1> : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @reduce_replicated(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{sync #lamina.sync<fwd_post, all_reduce> on layer 'fc' needs partial sums (P), but its input has layout #lamina.layout<R>}}
    %0 = lamina.linear_sync "fc" %x, %w sync <fwd_post, all_reduce> : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @column_bias_unsharded(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32>) -> tensor<4x16xf32> {
    // expected-error @+1 {{produces output features sharded over ranks (column parallel), so its bias must be sharded on axis 0 too, but the bias has layout #lamina.layout<R>}}
    %0 = lamina.linear "fc1" %x, %w1 bias %b1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @row_needs_sharded_input(%x: tensor<4x16xf32>,
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    // expected-error @+1 {{is row parallel (weight S(1)) and needs its input sharded on the last axis}}
    %0 = lamina.linear_sync "fc2" %x, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @fork_rng_replicated(%x: tensor<4x8xf32>, %s: i64) -> tensor<4x8xf32> {
    // expected-error @+1 {{uses fork_rng on a replicated value}}
    %0 = lamina.dropout %x <p = 0.1, training, fork_rng> seed %s : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @contract_sharded_with_replicated(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{contracts an input sharded on its last axis with a replicated weight}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  // Merging [4, 8] sharded on 8 gives 4 groups of blocks: a value no rank
  // can return as a block of the whole.
  func.func @reshape_sharded(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<32xf32> {
    %0 = tensor.collapse_shape %x [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
    // expected-error @+1 {{returns a value sharded in 4 groups as result 0; slice the groups apart or all_gather it first}}
    return %0 : tensor<32xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  // A transpose moves the sharding with its dim; adding the result to a
  // value sharded on the other axis mixes layouts.
  func.func @transpose_sharded(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %y: tensor<8x4xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<8x4xf32> {
    %e = tensor.empty() : tensor<8x4xf32>
    %0 = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
    // expected-error @+1 {{mixes operands with layouts #lamina.layout<S(0)> and #lamina.layout<S(1)>}}
    %1 = arith.addf %0, %y : tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  }
}

// -----

// LayerNorm over features each rank holds only a block of.
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_sharded_last(%x: tensor<2x4x16xf32> {lamina.layout = #lamina.layout<S(2)>}) -> tensor<2x4x16xf32> {
    // expected-error @+1 {{'lamina.layer_norm' op normalizes over the sharded last axis; all_gather the value first}}
    %0 = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    return %0 : tensor<2x4x16xf32>
  }
}

// -----

// The same after a column-parallel layer, whose output features are
// sharded.
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_after_column_parallel(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %g: tensor<16xf32>) -> tensor<4x16xf32> {
    %0 = lamina.linear "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    // expected-error @+1 {{normalizes over the sharded last axis; all_gather the value first}}
    %1 = lamina.layer_norm "ln" %0 weight %g eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
}

// -----

// LayerNorm of partial sums: the mean of a sum is not the sum of the
// per-rank means of it.
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_partial(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc2" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'lamina.layer_norm' op normalizes partial sums (layout P)}}
    %1 = lamina.layer_norm "ln" %0 eps 1.0e-05 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_sharded_weight(%x: tensor<4x16xf32>,
      %g: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    // expected-error @+1 {{takes a weight or bias with layout #lamina.layout<S(0)>; LayerNorm parameters must be replicated}}
    %0 = lamina.layer_norm "ln" %x weight %g eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_sharded_bias(%x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    // expected-error @+1 {{takes a weight or bias with layout #lamina.layout<S(0)>; LayerNorm parameters must be replicated}}
    %0 = lamina.layer_norm "ln" %x bias %b eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

// Softmax along the sharded axis: each rank would normalize its own block.
module attributes {lamina.world_size = 2 : i64} {
  func.func @softmax_own_dim(%x: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(2)>}) -> tensor<2x4x8xf32> {
    // expected-error @+1 {{'lamina.softmax' op normalizes along the sharded axis 2; all_gather the value first}}
    %0 = lamina.softmax %x dim 2 : tensor<2x4x8xf32>
    return %0 : tensor<2x4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @softmax_partial(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc2" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'lamina.softmax' op applies softmax to partial sums (layout P)}}
    %1 = lamina.softmax %0 dim 0 : tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

// A loss on logits sharded by rows (tokens), not classes: each rank would
// compute the loss of its rows only.
module attributes {lamina.world_size = 2 : i64} {
  func.func @loss_of_row_sharded_logits(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %t: tensor<4xi64>, %w: tensor<16x8xf32>) -> tensor<f32> {
    %y = lamina.linear "head" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    // expected-error @+1 {{'lamina.cross_entropy' op takes logits with layout #lamina.layout<S(0)>; a loss takes whole logits or logits sharded on the classes (S(1), vocabulary parallel): all_gather them first}}
    %l = lamina.cross_entropy %y, %t ignore_index -1 : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The loss of a row-parallel head's partial sums.
module attributes {lamina.world_size = 2 : i64} {
  func.func @loss_of_partial_logits(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>},
      %t: tensor<4xi64>, %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<f32> {
    %y = lamina.matmul "head" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    // expected-error @+1 {{'lamina.cross_entropy' op takes the loss of partial sums (layout P) of the value; add a fwd_post all_reduce (or reduce_scatter) sync before it}}
    %l = lamina.cross_entropy %y, %t ignore_index -1 : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Targets sharded over the ranks while the logits are whole.
module attributes {lamina.world_size = 2 : i64} {
  func.func @loss_of_sharded_targets(%y: tensor<4x16xf32>,
      %t: tensor<4xi64> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<f32> {
    // expected-error @+1 {{'lamina.cross_entropy' op takes targets with layout #lamina.layout<S(0)>; the targets must be replicated}}
    %l = lamina.cross_entropy %y, %t ignore_index -1 : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  // A schedule's all-reduce of a replicated value (not the model's own
  // call, lamina.as_written) is a double reduction.
  func.func @all_reduce_of_replicas(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{needs partial sums (P)}}
    %0 = lamina.sync %x <fwd_post, all_reduce> : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
