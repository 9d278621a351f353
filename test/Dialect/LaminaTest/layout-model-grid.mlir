// RUN: lamina-opt %s "--lamina-check-layouts=annotate=true" | FileCheck %s --check-prefix=FWD
// RUN: lamina-opt %s --lamina-check-gradient-layouts | FileCheck %s --check-prefix=GRAD

// The one model of lamina_test.scale (test/lib/Dialect/Test), stated for a
// single axis, serves a grid of two: the drivers apply it per axis, so the
// scale passes the batch's S(0) over `dp` and the row-parallel partial sums
// over `tp` at once.

// FWD-LABEL: func.func @dp_tp_mlp
// FWD: lamina_test.scale %{{.*}} by 2.000000e+00 {lamina.result_layouts = [#lamina.layout<[dp: S(0), tp: S(1)]>]} : tensor<4x16xf32>
// FWD: lamina_test.scale %{{.*}} by 5.000000e-01 {lamina.result_layouts = [#lamina.layout<[dp: S(0), tp: P]>]} : tensor<4x8xf32>
// FWD: lamina.sync "fc2" %{{.*}} <fwd_post, all_reduce> {lamina.backward = "identity", lamina.result_layouts = [#lamina.layout<[dp: S(0)]>]}

// GRAD-LABEL: func.func @dp_tp_mlp
// GRAD: lamina_test.scale
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @dp_tp_mlp(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>},
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %h = lamina.matmul "fc1" %s, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %a = lamina_test.scale %h by 2.0 : tensor<4x16xf32>
    %p = lamina.matmul "fc2" %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %q = lamina_test.scale %p by 0.5 : tensor<4x8xf32>
    %y = lamina.sync "fc2" %q <fwd_post, all_reduce> : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
