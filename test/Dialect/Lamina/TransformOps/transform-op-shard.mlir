// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// The Megatron MLP's parameters: fc1 column parallel (weight and bias on
// axis 0), fc2 row parallel (weight on axis 1).
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: %{{.*}}: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}
// CHECK-SAME: %{{.*}}: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>}
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}
module attributes {lamina.world_size = 2 : i64} {
  func.func @megatron_mlp(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear "fc2" %0, %w2 bias %b2 : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc1 = transform.lamina.match %root path "fc1" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %fc1 "weight" axis 0 : !transform.any_op
      transform.lamina.shard %fc1 "bias" axis 0 : !transform.any_op
      %fc2 = transform.lamina.match %root path "fc2" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %fc2 "weight" axis 1 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @twice(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %fc "weight" axis 0 : !transform.any_op
      // expected-error @+1 {{weight is already sharded on axis 0; sharding a parameter twice is an error}}
      transform.lamina.shard %fc "weight" axis 1 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @axis_range(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{axis 2 is out of range for the weight of rank 2}}
      transform.lamina.shard %fc "weight" axis 2 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 3 : i64} {
  func.func @not_divisible(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{weight dimension 0 of size 16 is not divisible by the world size 3}}
      transform.lamina.shard %fc "weight" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @no_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{the layer has no parameter 'bias'}}
      transform.lamina.shard %fc "bias" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @computed(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    %w2 = arith.addf %w, %w : tensor<16x8xf32>
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w2 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{parameter 'weight' is computed by the program, not passed in}}
      transform.lamina.shard %fc "weight" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

func.func @no_world_size(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{the program declares no lamina.world_size (or lamina.grid axis 'tp') to shard over}}
    transform.lamina.shard %fc "weight" axis 0 : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{shards 'weight', 'bias' or 'input', got 'output'}}
    transform.lamina.shard %root "output" axis 0 : !transform.any_op
    transform.yield
  }
}

// -----

// Sequence parallelism: the tokens entering fc1 are sharded over ranks.
// CHECK-LABEL: func.func @sequence_parallel
// CHECK-SAME: %{{.*}}: tensor<2x8x16xf32> {lamina.layout = #lamina.layout<S(1)>}
module attributes {lamina.world_size = 2 : i64} {
  func.func @sequence_parallel(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>) -> tensor<2x8x32xf32> {
    %0 = lamina.linear "fc1" %x, %w : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
    return %0 : tensor<2x8x32xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc1" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %fc "input" axis 1 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// An input computed inside the program cannot be handed out in blocks.
module attributes {lamina.world_size = 2 : i64} {
  func.func @computed_input(%x: tensor<2x16xf32>, %w: tensor<32x16xf32>) -> tensor<2x32xf32> {
    %y = arith.addf %x, %x : tensor<2x16xf32>
    // expected-note @+1 {{layer 'fc1'}}
    %0 = lamina.linear "fc1" %y, %w : (tensor<2x16xf32>, tensor<32x16xf32>) -> tensor<2x32xf32>
    return %0 : tensor<2x32xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc1" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{parameter 'input' is computed by the program, not passed in}}
      transform.lamina.shard %fc "input" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// LayerNorm is a layer: its parameters are reached by name like a linear
// layer's. "weight" marks the argument holding it (and nothing else);
// "input" hands each rank a block of the tokens.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<4x8x16xf32> {lamina.layout = #lamina.layout<S(1)>}, %{{[a-z0-9]+}}: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>}, %{{[a-z0-9]+}}: tensor<16xf32>)
// CHECK: lamina.layer_norm "ln"
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm(%x: tensor<4x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x8x16xf32> {
    %0 = lamina.layer_norm "ln" %x weight %g bias %b eps 1.0e-05 : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    return %0 : tensor<4x8x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %l = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %l "weight" axis 0 : !transform.any_op
      transform.lamina.shard %l "input" axis 1 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// The bias of a LayerNorm, likewise.
// CHECK-LABEL: func.func @layer_norm_bias
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<4x16xf32>, %{{[a-z0-9]+}}: tensor<16xf32>, %{{[a-z0-9]+}}: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>})
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_bias(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    %0 = lamina.layer_norm "ln" %x weight %g bias %b eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %l = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %l "bias" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// elementwise_affine=False: there is no weight to shard.
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_no_weight(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'ln'}}
    %0 = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<4x16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %l = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{the layer has no parameter 'weight'}}
      transform.lamina.shard %l "weight" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// A contiguous [Q; K; V] projection sharded by heads: each third on its
// own.
// CHECK-LABEL: func.func @qkv_by_heads
// CHECK-SAME: %{{.+}}: tensor<96x32xf32> {lamina.layout = #lamina.layout<S(0, groups = 3)>}, %{{.+}}: tensor<96xf32> {lamina.layout = #lamina.layout<S(0, groups = 3)>}
module attributes {lamina.world_size = 2 : i64} {
  func.func @qkv_by_heads(%x: tensor<4x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> tensor<4x96xf32> {
    %0 = lamina.linear "c_attn" %x, %w bias %b : (tensor<4x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<4x96xf32>
    return %0 : tensor<4x96xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %l = transform.lamina.match %root path "c_attn" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %l "weight" axis 0 groups 3 : !transform.any_op
      transform.lamina.shard %l "bias" axis 0 groups 3 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 4 : i64} {
  func.func @groups_not_divisible(%x: tensor<4x32xf32>, %w: tensor<96x32xf32>) -> tensor<4x96xf32> {
    // expected-note @+1 {{layer 'c_attn'}}
    %0 = lamina.linear "c_attn" %x, %w : (tensor<4x32xf32>, tensor<96x32xf32>) -> tensor<4x96xf32>
    return %0 : tensor<4x96xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %l = transform.lamina.match %root path "c_attn" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{weight dimension 0 of size 96 is not 5 equal groups}}
      transform.lamina.shard %l "weight" axis 0 groups 5 : !transform.any_op
      transform.yield
    }
  }
}

// -----

module attributes {lamina.world_size = 3 : i64} {
  func.func @group_not_divisible(%x: tensor<4x32xf32>, %w: tensor<96x32xf32>) -> tensor<4x96xf32> {
    // expected-note @+1 {{layer 'c_attn'}}
    %0 = lamina.linear "c_attn" %x, %w : (tensor<4x32xf32>, tensor<96x32xf32>) -> tensor<4x96xf32>
    return %0 : tensor<4x96xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %l = transform.lamina.match %root path "c_attn" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{weight dimension 0 of size 96 in 3 groups of 32 is not divisible by the world size 3}}
      transform.lamina.shard %l "weight" axis 0 groups 3 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// On a grid of two axes, shard acts on `tp` (dividing by its 2 ranks, not
// the world's 6) and keeps the layout declared on `dp`.
// CHECK-LABEL: func.func @on_a_grid
// CHECK-SAME: %{{.*}}: tensor<6x8xf32> {lamina.layout = #lamina.layout<[dp: S(0), tp: S(1)]>}
module attributes {lamina.grid = {dp = 3, tp = 2}} {
  func.func @on_a_grid(%x: tensor<4x8xf32>,
      %w: tensor<6x8xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>}) -> tensor<4x6xf32> {
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      transform.lamina.shard %fc "weight" axis 1 : !transform.any_op
      transform.yield
    }
  }
}
