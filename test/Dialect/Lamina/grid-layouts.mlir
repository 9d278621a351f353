// RUN: lamina-opt %s --split-input-file | FileCheck %s --check-prefix=SPELLING
// RUN: lamina-opt %s --split-input-file --lamina-check-layouts=annotate | FileCheck %s --check-prefix=ANNOTATE
// RUN: lamina-opt %s --split-input-file --lamina-check-gradient-layouts | FileCheck %s --check-prefix=GRADIENTS

// Layouts over a grid of two axes: the canonical spelling sorts the axes,
// leaves replicated ones out and writes a layout on `tp` alone in the
// one-axis form.
// SPELLING-LABEL: func.func @spellings
// SPELLING-SAME: #lamina.layout<[dp: S(0), tp: S(1)]>
// SPELLING-SAME: #lamina.layout<S(0)>
// SPELLING-SAME: #lamina.layout<[dp: S(1)]>
// SPELLING-SAME: #lamina.layout<R>
// SPELLING-SAME: #lamina.layout<[dp: P, tp: S(0, groups = 3)]>
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @spellings(
      %a: tensor<8x16xf32> {lamina.layout = #lamina.layout<[tp: S(1), dp: S(0)]>},
      %b: tensor<8x16xf32> {lamina.layout = #lamina.layout<[tp: S(0), dp: R]>},
      %c: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(1)]>},
      %d: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: R, tp: R]>},
      %e: tensor<12x16xf32> {lamina.layout = #lamina.layout<[tp: S(0, groups = 3), dp: P]>}) {
    return
  }
}

// -----

// Data × tensor parallelism: the batch sharded over `dp`, a Megatron MLP
// over `tp`. Each axis follows its own rules (the sync acts on `tp` only),
// and the annotation composes them.
// ANNOTATE-LABEL: func.func @dp_tp_mlp
// ANNOTATE: lamina.matmul "fc1" {{.*}}lamina.result_layouts = [#lamina.layout<[dp: S(0), tp: S(1)]>]
// ANNOTATE: lamina.activation "fc1" {{.*}}lamina.result_layouts = [#lamina.layout<[dp: S(0), tp: S(1)]>]
// ANNOTATE: lamina.matmul "fc2" {{.*}}lamina.result_layouts = [#lamina.layout<[dp: S(0), tp: P]>]
// ANNOTATE: lamina.sync "fc2" {{.*}}lamina.result_layouts = [#lamina.layout<[dp: S(0)]>]
// ANNOTATE: lamina.bias_add "fc2" {{.*}}lamina.result_layouts = [#lamina.layout<[dp: S(0)]>]
// The backward is right on both axes: the input's gradient is all-reduced
// over `tp` by fc1's bwd_post sync, and over `dp` the weights' partial
// gradients are parameters' (reduced over the replicas).
// GRADIENTS-LABEL: func.func @dp_tp_mlp
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @dp_tp_mlp(
      %x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>},
      %w1: tensor<32x16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<16x32xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<16xf32>) -> tensor<8x16xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<8x16xf32>
    %h = lamina.matmul "fc1" %s, %w1 : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
    %a = lamina.activation "fc1" gelu_tanh %h : tensor<8x32xf32>
    %y = lamina.matmul "fc2" %a, %w2 : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
    %r = lamina.sync "fc2" %y <fwd_post, all_reduce> : tensor<8x16xf32>
    %o = lamina.bias_add "fc2" %r, %b2 : tensor<8x16xf32>, tensor<16xf32>
    return %o : tensor<8x16xf32>
  }
}

// -----

// A replica reduction acts on `dp`: a gradient computed from each replica's
// batch (partial over `dp`) becomes whole there, and its layout on `tp`
// passes through.
// ANNOTATE-LABEL: func.func @replica_sum
// ANNOTATE: lamina.matmul "fc" {{.*}}lamina.result_layouts = [#lamina.layout<[dp: P, tp: S(0)]>]
// ANNOTATE: lamina.reduce_replicas {{.*}}lamina.result_layouts = [#lamina.layout<S(0)>]
// GRADIENTS-LABEL: func.func @replica_sum
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @replica_sum(
      %dyt: tensor<16x8xf32> {lamina.layout = #lamina.layout<[dp: S(1), tp: S(0)]>},
      %xt: tensor<16x8xf32> {lamina.layout = #lamina.layout<[dp: S(1)]>})
      -> tensor<16x16xf32> {
    %dw = lamina.matmul "fc" %dyt, %xt : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x16xf32>
    %g = lamina.reduce_replicas %dw mean : tensor<16x16xf32>
    return %g : tensor<16x16xf32>
  }
}
