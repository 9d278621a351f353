// RUN: lamina-opt %s "--lamina-check-layouts=annotate=true" --split-input-file | FileCheck %s
// The annotations are valid lamina attributes: the output parses again.
// RUN: lamina-opt %s "--lamina-check-layouts=annotate=true" --split-input-file | lamina-opt --split-input-file | FileCheck %s

// The Megatron MLP (spec §3): fc1 column parallel (weight and bias S(0)) on
// a replicated input gives S(last) = S(1); fc2 row parallel gives partial
// sums, which its fwd_post all_reduce makes whole (R) before the bias; the
// residual add of two replicated values is replicated.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK: %[[S:.+]] = lamina.sync "fc1" %{{.*}} <bwd_post, all_reduce> {lamina.backward = "all_reduce", lamina.result_layouts = [#lamina.layout<R>]} : tensor<4x8xf32>
// CHECK: %[[H:.+]] = lamina.linear_act "fc1" %[[S]], %{{.*}} bias %{{.*}} activation gelu_tanh {lamina.result_layouts = [#lamina.layout<S(1)>]}
// CHECK: %[[Y:.+]] = lamina.linear_sync "fc2" %[[H]], %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} {lamina.backward = "identity", lamina.result_layouts = [#lamina.layout<R>]}
// CHECK: arith.addf %{{.*}}, %[[Y]] {lamina.result_layouts = [#lamina.layout<R>]} : tensor<4x8xf32>
// CHECK-NOT: lamina.backward
// CHECK: return
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

// The decomposed Megatron MLP: every piece has its layout, the partial sums
// P between fc2's matmul and its all-reduce included.
// CHECK-LABEL: func.func @megatron_mlp_pieces
// CHECK: lamina.matmul "fc1" {{.*}} {lamina.result_layouts = [#lamina.layout<S(1)>]}
// CHECK: lamina.bias_add "fc1" {{.*}} {lamina.result_layouts = [#lamina.layout<S(1)>]}
// CHECK: lamina.activation "fc1" gelu_tanh {{.*}} {lamina.result_layouts = [#lamina.layout<S(1)>]}
// CHECK: lamina.matmul "fc2" {{.*}} {lamina.result_layouts = [#lamina.layout<P>]}
// CHECK: lamina.sync "fc2" %{{.*}} <fwd_post, all_reduce> {lamina.backward = "identity", lamina.result_layouts = [#lamina.layout<R>]}
// CHECK: lamina.bias_add "fc2" {{.*}} {lamina.result_layouts = [#lamina.layout<R>]}
module attributes {lamina.world_size = 2 : i64} {
  func.func @megatron_mlp_pieces(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.bias_add "fc1" %0, %b1 : tensor<4x16xf32>, tensor<16xf32>
    %2 = lamina.activation "fc1" gelu_tanh %1 : tensor<4x16xf32>
    %3 = lamina.matmul "fc2" %2, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %4 = lamina.sync "fc2" %3 <fwd_post, all_reduce> : tensor<4x8xf32>
    %5 = lamina.bias_add "fc2" %4, %b2 : tensor<4x8xf32>, tensor<8xf32>
    return %5 : tensor<4x8xf32>
  }
}

// -----

// Each sync kind and its backward collective (spec §3 table), on values of
// the layouts the forward collective takes.
// CHECK-LABEL: func.func @backward_of_each_sync
module attributes {lamina.world_size = 2 : i64} {
  func.func @backward_of_each_sync(%r: tensor<4x8xf32>,
      %s0: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %s1: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>},
      %p: tensor<4x8xf32> {lamina.layout = #lamina.layout<P>})
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
          tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
          tensor<4x8xf32>) {
    // fwd_post all_reduce: P → R; the gradient of R passes as it is.
    // CHECK: lamina.sync %{{.*}} <fwd_post, all_reduce> {lamina.backward = "identity", lamina.result_layouts = [#lamina.layout<R>]}
    %0 = lamina.sync %p <fwd_post, all_reduce> : tensor<4x8xf32>
    // fwd_post all_gather(a): S(a) → R; backward reduce_scatter(a).
    // CHECK: lamina.sync %{{.*}} <fwd_post, all_gather, axis = 1> {lamina.backward = "reduce_scatter axis = 1", lamina.result_layouts = [#lamina.layout<R>]}
    %1 = lamina.sync %s1 <fwd_post, all_gather, axis = 1> : tensor<4x8xf32>
    // ... a plain split when the output gradient is whole on every rank.
    // CHECK: lamina.sync %{{.*}} <fwd_post, all_gather, axis = 0, tensor_parallel_output_grad = false> {lamina.backward = "scatter axis = 0", lamina.result_layouts = [#lamina.layout<R>]}
    %2 = lamina.sync %s0 <fwd_post, all_gather, axis = 0, tensor_parallel_output_grad = false> : tensor<4x8xf32>
    // fwd_post reduce_scatter(a): P → S(a); backward all_gather(a).
    // CHECK: lamina.sync %{{.*}} <fwd_post, reduce_scatter, axis = 0> {lamina.backward = "all_gather axis = 0", lamina.result_layouts = [#lamina.layout<S(0)>]}
    %3 = lamina.sync %p <fwd_post, reduce_scatter, axis = 0> : tensor<4x8xf32>
    // fwd_post scatter(a): R → S(a); backward all_gather(a).
    // CHECK: lamina.sync %{{.*}} <fwd_post, scatter, axis = 1> {lamina.backward = "all_gather axis = 1", lamina.result_layouts = [#lamina.layout<S(1)>]}
    %4 = lamina.sync %r <fwd_post, scatter, axis = 1> : tensor<4x8xf32>
    // fwd_pre all_gather(a): S(a) → R; backward reduce_scatter(a) ...
    // CHECK: lamina.sync %{{.*}} <fwd_pre, all_gather, axis = 0> {lamina.backward = "reduce_scatter axis = 0", lamina.result_layouts = [#lamina.layout<R>]}
    %5 = lamina.sync %s0 <fwd_pre, all_gather, axis = 0> : tensor<4x8xf32>
    // ... or a split under tensor_parallel_output_grad = false.
    // CHECK: lamina.sync %{{.*}} <fwd_pre, all_gather, axis = 1, tensor_parallel_output_grad = false> {lamina.backward = "scatter axis = 1", lamina.result_layouts = [#lamina.layout<R>]}
    %6 = lamina.sync %s1 <fwd_pre, all_gather, axis = 1, tensor_parallel_output_grad = false> : tensor<4x8xf32>
    // bwd_post all_reduce: the identity forward (R stays R, S(a) stays
    // S(a)); backward all_reduce of the input gradient.
    // CHECK: lamina.sync %{{.*}} <bwd_post, all_reduce> {lamina.backward = "all_reduce", lamina.result_layouts = [#lamina.layout<R>]}
    %7 = lamina.sync %r <bwd_post, all_reduce> : tensor<4x8xf32>
    // CHECK: lamina.sync %{{.*}} <bwd_post, all_reduce> {lamina.backward = "all_reduce", lamina.result_layouts = [#lamina.layout<S(0)>]}
    %8 = lamina.sync %s0 <bwd_post, all_reduce> : tensor<4x8xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// A layer's own fwd_post sync is annotated like a lamina.sync: sequence
// parallelism's reduce_scatter out of the row-parallel layer backward
// all-gathers, the gather into the column-parallel one reduce-scatters.
// CHECK-LABEL: func.func @sequence_parallel
// CHECK: lamina.sync %{{.*}} <fwd_pre, all_gather, axis = 1> {lamina.backward = "reduce_scatter axis = 1", lamina.result_layouts = [#lamina.layout<R>]}
// CHECK: lamina.linear "fc1" {{.*}} {lamina.result_layouts = [#lamina.layout<S(2)>]}
// CHECK: lamina.linear_sync "fc2" %{{.*}}, %{{.*}} sync <fwd_post, reduce_scatter, axis = 1> {lamina.backward = "all_gather axis = 1", lamina.result_layouts = [#lamina.layout<S(1)>]}
// A gather on the output of a column-parallel layer.
// CHECK: lamina.fused_linear "fc3" %{{.*}}, %{{.*}} sync <fwd_post, all_gather, axis = 2, tensor_parallel_output_grad = false> {lamina.backward = "scatter axis = 2", lamina.result_layouts = [#lamina.layout<R>]}
module attributes {lamina.world_size = 2 : i64} {
  func.func @sequence_parallel(%x: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w3: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
    %g = lamina.sync %x <fwd_pre, all_gather, axis = 1> : tensor<2x4x8xf32>
    %0 = lamina.linear "fc1" %g, %w1 : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, reduce_scatter, axis = 1> : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
    %2 = lamina.fused_linear "fc3" %g, %w3 sync <fwd_post, all_gather, axis = 2, tensor_parallel_output_grad = false> : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %1, %2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  }
}

// -----

// LayerNorm and softmax keep a batch sharding; fused QKV sharded by heads
// gives each of q, k, v the heads axis (one layout per result).
// CHECK-LABEL: func.func @attention_block
// CHECK: lamina.layer_norm "ln_1" {{.*}} {lamina.result_layouts = [#lamina.layout<R>]}
// CHECK: lamina.fused_qkv "qkv" {{.*}} {lamina.result_layouts = [#lamina.layout<S(1)>, #lamina.layout<S(1)>, #lamina.layout<S(1)>]}
// CHECK: lamina.softmax "attn" %{{.*}} dim 2 {lamina.result_layouts = [#lamina.layout<S(1)>]}
// CHECK: lamina.layer_norm "ln_b" {{.*}} {lamina.result_layouts = [#lamina.layout<S(0)>]}
// CHECK-NOT: lamina.backward
module attributes {lamina.world_size = 2 : i64} {
  func.func @attention_block(%x: tensor<2x32xf32>, %g: tensor<32xf32>,
      %wq: tensor<96x32xf32> {lamina.layout = #lamina.layout<S(0)>},
      %bq: tensor<96xf32> {lamina.layout = #lamina.layout<S(0)>},
      %t: tensor<4x2x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> (tensor<2x4x8xf32>, tensor<4x2x8xf32>) {
    %n = lamina.layer_norm "ln_1" %x weight %g eps 1.0e-05 : (tensor<2x32xf32>, tensor<32xf32>) -> tensor<2x32xf32>
    %q, %k, %v = lamina.fused_qkv "qkv" %n, %wq bias %bq num_heads 4 world_size 2 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    %p = lamina.softmax "attn" %q dim 2 : tensor<2x4x8xf32>
    %m = lamina.layer_norm "ln_b" %t eps 1.0e-05 : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    return %p, %m : tensor<2x4x8xf32>, tensor<4x2x8xf32>
  }
}
