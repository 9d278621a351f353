// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// The Megatron MLP recipe: fc1 gets a bwd_post all-reduce on its input;
// fc2 a fwd_post all-reduce between its matmul and its bias.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x8xf32>
// CHECK: %[[S:.+]] = lamina.sync "fc1" %[[X]] <bwd_post, all_reduce> : tensor<4x8xf32>
// CHECK: %[[H:.+]] = lamina.linear_act "fc1" %[[S]], %{{.*}} bias %{{.*}} activation gelu_tanh
// CHECK: lamina.linear_sync "fc2" %[[H]], %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}}
module attributes {lamina.world_size = 2 : i64} {
  func.func @megatron_mlp(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear "fc2" %0, %w2 bias %b2 : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc1 = transform.lamina.match %root path "fc1" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %fc1 "bwd_post" "all_reduce" : !transform.any_op
      %fc2 = transform.lamina.match %root path "fc2" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %fc2 "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

// Sequence parallel: all-gather the input on axis 1; dropout layers keep
// their class and take the sync in their slot.
// CHECK-LABEL: func.func @sequence_parallel
// CHECK: lamina.sync "in" %{{.*}} <fwd_pre, all_gather, axis = 1>
// CHECK: lamina.linear_dropout "out" %{{.*}}, %{{.*}} sync <fwd_post, reduce_scatter, axis = 1> bias
func.func @sequence_parallel(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %s: i64) -> tensor<2x4x8xf32> {
  %0 = lamina.linear "in" %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %1 = lamina.linear_dropout "out" %0, %w bias %b dropout <p = 0.1, training> seed %s : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, i64) -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %in = transform.lamina.match %root path "in" : (!transform.any_op) -> !transform.any_op
    transform.lamina.sync %in "fwd_pre" "all_gather" axis 1 : !transform.any_op
    %out = transform.lamina.match %root path "out" : (!transform.any_op) -> !transform.any_op
    transform.lamina.sync %out "fwd_post" "reduce_scatter" axis 1 : !transform.any_op
    transform.yield
  }
}

// -----

func.func @axis_range(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{sync axis 2 is out of range for values of rank 2}}
    transform.lamina.sync %fc "fwd_post" "all_gather" axis 2 : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{sync mode fwd_pre does not exist with all_reduce}}
    transform.lamina.sync %root "fwd_pre" "all_reduce" : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{unknown sync 'fwd_post', 'broadcast'}}
    transform.lamina.sync %root "fwd_post" "broadcast" : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{all_gather needs an axis}}
    transform.lamina.sync %root "fwd_pre" "all_gather" : !transform.any_op
    transform.yield
  }
}

// -----

// A fused QKV takes input-side syncs; its bwd_post all-reduce sits on its
// input.
// CHECK-LABEL: func.func @qkv_bwd_post
// CHECK: %[[S:.+]] = lamina.sync "qkv" %{{.*}} <bwd_post, all_reduce> : tensor<2x16xf32>
// CHECK: lamina.fused_qkv "qkv" %[[S]],
module attributes {lamina.world_size = 2 : i64} {
  func.func @qkv_bwd_post(%x: tensor<2x16xf32>, %w: tensor<48x16xf32>, %b: tensor<48xf32>) -> tensor<2x4x4xf32> {
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
    return %q : tensor<2x4x4xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %qkv = transform.lamina.match %root path "qkv" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %qkv "bwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @qkv_fwd_post(%x: tensor<2x16xf32>, %w: tensor<48x16xf32>, %b: tensor<48xf32>) -> tensor<2x4x4xf32> {
    // expected-note @+1 {{layer 'qkv'}}
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
    return %q : tensor<2x4x4xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %qkv = transform.lamina.match %root path "qkv" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{a fused QKV has no fwd_post sync slot; sync its outputs with lamina.sync}}
      transform.lamina.sync %qkv "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

// Where the schedule already fixes the layout, an illegal sync fails at
// once: a column-parallel output is sharded, not partial sums.
module attributes {lamina.world_size = 2 : i64} {
  func.func @all_reduce_sharded(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{sync #lamina.sync<fwd_post, all_reduce> needs partial sums (P), but the layer's output has layout #lamina.layout<S(1)>}}
      transform.lamina.sync %fc "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

// A row-parallel output holds partial sums: gathering them is wrong.
module attributes {lamina.world_size = 2 : i64} {
  func.func @all_gather_partial(%x: tensor<4x16xf32>, %w: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{sync #lamina.sync<fwd_post, all_gather, axis = 1> needs a value sharded on axis 1, but the layer's output has layout #lamina.layout<P>}}
      transform.lamina.sync %fc "fwd_post" "all_gather" axis 1 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// A program input sharded on the tokens cannot be gathered on features.
module attributes {lamina.world_size = 2 : i64} {
  func.func @all_gather_wrong_axis(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{sync #lamina.sync<fwd_pre, all_gather, axis = 1> needs a value sharded on axis 1, but the layer's input has layout #lamina.layout<S(0)>}}
      transform.lamina.sync %fc "fwd_pre" "all_gather" axis 1 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// LayerNorm takes input-side syncs like any layer: sequence parallelism
// gathers the tokens before it, and a bwd_post all-reduce sits on its input.
// CHECK-LABEL: func.func @layer_norm_input_syncs
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x4x8xf32>
// CHECK: %[[G:.+]] = lamina.sync "ln_1" %[[X]] <fwd_pre, all_gather, axis = 1> : tensor<2x4x8xf32>
// CHECK: %[[R:.+]] = lamina.sync "ln_1" %[[G]] <bwd_post, all_reduce> : tensor<2x4x8xf32>
// CHECK: lamina.layer_norm "ln_1" %[[R]] weight %{{.*}} eps
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_input_syncs(%x: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
    %0 = lamina.layer_norm "ln_1" %x weight %g eps 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    return %0 : tensor<2x4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %ln = transform.lamina.match %root path "ln_1" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %ln "fwd_pre" "all_gather" axis 1 : !transform.any_op
      transform.lamina.sync %ln "bwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

