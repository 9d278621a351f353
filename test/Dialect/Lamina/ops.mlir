// RUN: lamina-opt %s | lamina-opt | FileCheck %s
// RUN: lamina-opt %s --mlir-print-op-generic | lamina-opt | FileCheck %s

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: lamina.linear "h.0.mlp.fc_in" %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %0 = lamina.linear "h.0.mlp.fc_in" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.linear "h.0.mlp.fc_in" %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.linear "h.0.mlp.fc_in" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// CHECK-LABEL: func.func @batch_dims_and_mixed_precision
func.func @batch_dims_and_mixed_precision(%x: tensor<2x3x5x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>, %xd: tensor<?x8xf16>, %wd: tensor<16x8xf16>) -> (tensor<2x3x5x16xf32>, tensor<?x16xf16>) {
  // CHECK: lamina.linear "l" %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<2x3x5x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<2x3x5x16xf32>
  %0 = lamina.linear "l" %x, %w bias %b : (tensor<2x3x5x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<2x3x5x16xf32>
  // CHECK: lamina.linear "d" %{{.*}}, %{{.*}} : (tensor<?x8xf16>, tensor<16x8xf16>) -> tensor<?x16xf16>
  %1 = lamina.linear "d" %xd, %wd : (tensor<?x8xf16>, tensor<16x8xf16>) -> tensor<?x16xf16>
  return %0, %1 : tensor<2x3x5x16xf32>, tensor<?x16xf16>
}

// CHECK-LABEL: func.func @lns_linear
func.func @lns_linear(%x: tensor<4x8x!lns.num<f = 16>>, %w: tensor<16x8x!lns.num<f = 12>>, %b: tensor<16x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 16>> {
  // CHECK: lamina.linear "lns.fc" {{.*}} -> tensor<4x16x!lns.num<f = 16>>
  %0 = lamina.linear "lns.fc" %x, %w bias %b : (tensor<4x8x!lns.num<f = 16>>, tensor<16x8x!lns.num<f = 12>>, tensor<16x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 16>>
  return %0 : tensor<4x16x!lns.num<f = 16>>
}

// CHECK-LABEL: func.func @slapo_family
func.func @slapo_family(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %seed: i64) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: lamina.linear_separate_bias "a" %{{.*}}, %{{.*}} bias %{{.*}} :
  %0 = lamina.linear_separate_bias "a" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.linear_sync "b" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} :
  %1 = lamina.linear_sync "b" %x, %w sync <fwd_post, all_reduce> bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.linear_act "c" %{{.*}}, %{{.*}} bias %{{.*}} activation gelu_erf :
  %2 = lamina.linear_act "c" %x, %w bias %b activation gelu_erf : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.linear_act "d" %{{.*}}, %{{.*}} sync <fwd_post, reduce_scatter, axis = 1> bias %{{.*}} activation relu :
  %3 = lamina.linear_act "d" %x, %w sync <fwd_post, reduce_scatter, axis = 1> bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.linear_dropout "e" %{{.*}}, %{{.*}} bias %{{.*}} dropout <p = 0.1, training, offset = 7> seed %{{.*}} :
  %4 = lamina.linear_dropout "e" %x, %w bias %b dropout <p = 0.1, training, offset = 7> seed %seed : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  return %0, %1, %2, %3, %4 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// CHECK-LABEL: func.func @fused_qkv
func.func @fused_qkv(%x: tensor<2x8x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>, %wl: tensor<48x32xf32>, %bl: tensor<48xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>) {
  // CHECK: %[[Q:.+]], %[[K:.+]], %[[V:.+]] = lamina.fused_qkv "h.0.attn.qkv" %{{.*}}, %{{.*}} bias %{{.*}} num_heads 4 world_size 1 :
  // CHECK-SAME: -> (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>)
  %q, %k, %v = lamina.fused_qkv "h.0.attn.qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x8x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>)
  // Per-rank form: 4 heads over 2 ranks, this rank's weight rows only.
  // CHECK: lamina.fused_qkv "h.0.attn.qkv" %{{.*}}, %{{.*}} bias %{{.*}} num_heads 4 world_size 2 :
  // CHECK-SAME: -> (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  %ql, %kl, %vl = lamina.fused_qkv "h.0.attn.qkv" %x, %wl bias %bl num_heads 4 world_size 2 : (tensor<2x8x32xf32>, tensor<48x32xf32>, tensor<48xf32>) -> (tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32>)
  return %q, %ql : tensor<2x8x4x8xf32>, tensor<2x8x2x8xf32>
}

// CHECK-LABEL: func.func @primitives
func.func @primitives(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xf32>, %seed: i64) -> tensor<4x16xf32> {
  // CHECK: %[[MM:.+]] = lamina.matmul "p" %{{.*}}, %{{.*}} : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  %0 = lamina.matmul "p" %x, %w : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  // CHECK: %[[S:.+]] = lamina.sync %[[MM]] <fwd_post, all_reduce> : tensor<4x16xf32>
  %1 = lamina.sync %0 <fwd_post, all_reduce> : tensor<4x16xf32>
  // CHECK: %[[B:.+]] = lamina.bias_add "p" %[[S]], %{{.*}} : tensor<4x16xf32>, tensor<16xf32>
  %2 = lamina.bias_add "p" %1, %b : tensor<4x16xf32>, tensor<16xf32>
  // CHECK: %[[A:.+]] = lamina.activation gelu_tanh %[[B]] : tensor<4x16xf32>
  %3 = lamina.activation gelu_tanh %2 : tensor<4x16xf32>
  // CHECK: %[[D:.+]] = lamina.dropout %[[A]] <p = 0.25, training, offset = 1, fork_rng> seed %{{.*}} : tensor<4x16xf32>
  %4 = lamina.dropout %3 <p = 0.25, training, offset = 1, fork_rng> seed %seed : tensor<4x16xf32>
  // CHECK: lamina.sync %[[D]] <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false> : tensor<4x16xf32>
  %5 = lamina.sync %4 <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false> : tensor<4x16xf32>
  // CHECK: lamina.sync %{{.*}} <fwd_pre, all_gather, axis = 0> : tensor<4x16xf32>
  %6 = lamina.sync %5 <fwd_pre, all_gather, axis = 0> : tensor<4x16xf32>
  // CHECK: lamina.sync %{{.*}} <bwd_post, all_reduce> : tensor<4x16xf32>
  %7 = lamina.sync %6 <bwd_post, all_reduce> : tensor<4x16xf32>
  // CHECK: lamina.sync %{{.*}} <fwd_post, scatter, axis = 1> : tensor<4x16xf32>
  %8 = lamina.sync %7 <fwd_post, scatter, axis = 1> : tensor<4x16xf32>
  return %8 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @fused_linear
func.func @fused_linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %seed: i64) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: lamina.fused_linear "f" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} activation gelu_tanh dropout <p = 0.1, training> seed %{{.*}} :
  %0 = lamina.fused_linear "f" %x, %w sync <fwd_post, all_reduce> bias %b activation gelu_tanh dropout <p = 0.1, training> seed %seed : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  // CHECK: lamina.fused_linear "g" %{{.*}}, %{{.*}} activation relu :
  %1 = lamina.fused_linear "g" %x, %w activation relu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.fused_linear "h" %{{.*}}, %{{.*}} bias %{{.*}} :
  %2 = lamina.fused_linear "h" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0, %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// CHECK-LABEL: func.func @silu_and_sigmoid
func.func @silu_and_sigmoid(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  // CHECK: lamina.fused_linear "gate" %{{.*}}, %{{.*}} bias %{{.*}} activation silu :
  %0 = lamina.fused_linear "gate" %x, %w bias %b activation silu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.activation sigmoid %{{.*}} : tensor<4x8xf32>
  %1 = lamina.activation sigmoid %x : tensor<4x8xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x8xf32>
}

// One rank's ops in a partitioned program: a sharded dropout and a fused
// linear carry the rank that locates their block.
// CHECK-LABEL: func.func @per_rank
func.func @per_rank(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %seed: i64, %rank: index) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: lamina.dropout %{{.*}} <p = 0.1, training, shard_axis = 1, shards = 2> seed %{{.*}} rank %{{.*}} : tensor<4x16xf32>
  %0 = lamina.fused_linear "f" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.dropout %0 <p = 0.1, training, shard_axis = 1, shards = 2> seed %seed rank %rank : tensor<4x16xf32>
  // CHECK: lamina.fused_linear "g" %{{.*}}, %{{.*}} dropout <p = 0.1, training, fork_rng> seed %{{.*}} rank %{{.*}} :
  %2 = lamina.fused_linear "g" %x, %w dropout <p = 0.1, training, fork_rng> seed %seed rank %rank : (tensor<4x8xf32>, tensor<16x8xf32>, i64, index) -> tensor<4x16xf32>
  return %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// nn.LayerNorm over the last dim: weight and bias each optional, eps kept
// as written (an f64 attribute).
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x8x32xf32>, %[[W:[a-z0-9]+]]: tensor<32xf32>, %[[B:[a-z0-9]+]]: tensor<32xf32>, %[[D:[a-z0-9]+]]: tensor<?x16xf32>)
func.func @layer_norm(%x: tensor<2x8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>, %d: tensor<?x16xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<?x16xf32>) {
  // CHECK: lamina.layer_norm "h.0.ln_1" %[[X]] weight %[[W]] bias %[[B]] eps 1.000000e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %0 = lamina.layer_norm "h.0.ln_1" %x weight %w bias %b eps 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // 1e-06 is not exact in f64 and prints with all 17 digits.
  // CHECK: lamina.layer_norm "no_affine" %[[X]] eps 9.9999999999999995E-7 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %1 = lamina.layer_norm "no_affine" %x eps 1.0e-06 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: lamina.layer_norm "weight_only" %[[X]] weight %[[W]] eps 1.000000e-05 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %2 = lamina.layer_norm "weight_only" %x weight %w eps 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // The bias alone (bias=None is the other way round) and eps = 0.
  // CHECK: lamina.layer_norm "bias_only" %[[X]] bias %[[B]] eps 0.000000e+00 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %3 = lamina.layer_norm "bias_only" %x bias %b eps 0.0 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // A dynamic row count.
  // CHECK: lamina.layer_norm "dyn" %[[D]] eps 1.000000e-05 : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %4 = lamina.layer_norm "dyn" %d eps 1.0e-05 : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<?x16xf32>
}

// Softmax along one dim, with or without a path.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[S:[a-z0-9]+]]: tensor<2x4x8x8xf32>, %[[H:[a-z0-9]+]]: tensor<4x16xbf16>)
func.func @softmax(%s: tensor<2x4x8x8xf32>, %h: tensor<4x16xbf16>) -> (tensor<2x4x8x8xf32>, tensor<4x16xbf16>) {
  // CHECK: %[[P:.+]] = lamina.softmax %[[S]] dim 3 : tensor<2x4x8x8xf32>
  %0 = lamina.softmax %s dim 3 : tensor<2x4x8x8xf32>
  // CHECK: lamina.softmax "h.0.attn" %[[P]] dim 0 : tensor<2x4x8x8xf32>
  %1 = lamina.softmax "h.0.attn" %0 dim 0 : tensor<2x4x8x8xf32>
  // CHECK: lamina.softmax %[[H]] dim 1 : tensor<4x16xbf16>
  %2 = lamina.softmax %h dim 1 : tensor<4x16xbf16>
  return %1, %2 : tensor<2x4x8x8xf32>, tensor<4x16xbf16>
}

// Layouts of a sharded program over 2 ranks.
module attributes {lamina.world_size = 2 : i64} {
  // CHECK-LABEL: func.func @layouts
  // CHECK-SAME: {lamina.layout = #lamina.layout<S(0)>}
  // CHECK-SAME: {lamina.layout = #lamina.layout<R>}
  // CHECK-SAME: {lamina.layout = #lamina.layout<P>}
  func.func @layouts(%w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
                     %x: tensor<4x8xf32> {lamina.layout = #lamina.layout<R>},
                     %p: tensor<4x16xf32> {lamina.layout = #lamina.layout<P>}) {
    return
  }
}

// The derivative ops lamina-generate-backward writes: activation_grad (with
// or without a path, each kind), layer_norm_grad with or without a weight
// (three results either way), softmax_grad on the softmax's output.
// CHECK-LABEL: func.func @derivatives
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x8x32xf32>, %[[DY:[a-z0-9]+]]: tensor<2x8x32xf32>, %[[W:[a-z0-9]+]]: tensor<32xf32>, %[[H:[a-z0-9]+]]: tensor<4x16xbf16>)
func.func @derivatives(%x: tensor<2x8x32xf32>, %dy: tensor<2x8x32xf32>, %w: tensor<32xf32>, %h: tensor<4x16xbf16>) -> (tensor<2x8x32xf32>, tensor<4x16xbf16>) {
  // CHECK: lamina.activation_grad "h.0.mlp.fc_in" gelu_tanh %[[X]], %[[DY]] : tensor<2x8x32xf32>
  %0 = lamina.activation_grad "h.0.mlp.fc_in" gelu_tanh %x, %dy : tensor<2x8x32xf32>
  // CHECK: lamina.activation_grad gelu_erf %[[X]], %[[DY]] : tensor<2x8x32xf32>
  %1 = lamina.activation_grad gelu_erf %x, %dy : tensor<2x8x32xf32>
  // CHECK: lamina.activation_grad relu %[[H]], %[[H]] : tensor<4x16xbf16>
  %2 = lamina.activation_grad relu %h, %h : tensor<4x16xbf16>
  // CHECK: %{{.+}}, %{{.+}}, %{{.+}} = lamina.layer_norm_grad %[[X]], %[[DY]] weight %[[W]] eps 1.000000e-05 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %dx, %dw, %db = lamina.layer_norm_grad %x, %dy weight %w eps 1.0e-05 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  // CHECK: lamina.layer_norm_grad %[[X]], %[[DY]] eps 0.000000e+00 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %dx2, %dw2, %db2 = lamina.layer_norm_grad %x, %dy eps 0.0 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  // CHECK: lamina.softmax_grad %[[X]], %[[DY]] dim 2 : tensor<2x8x32xf32>
  %3 = lamina.softmax_grad %x, %dy dim 2 : tensor<2x8x32xf32>
  // CHECK: lamina.softmax_grad %[[H]], %[[H]] dim 0 : tensor<4x16xbf16>
  %4 = lamina.softmax_grad %h, %h dim 0 : tensor<4x16xbf16>
  return %3, %4 : tensor<2x8x32xf32>, tensor<4x16xbf16>
}
