// RUN: lamina-opt %s --lamina-check-layouts -verify-diagnostics
// RUN: lamina-opt %s --lamina-check-gradient-layouts -verify-diagnostics

// Without a model an op is element-wise to the layout rules: partial sums
// may not pass it (lamina_test.scale, with its model, may:
// layout-model.mlir).
module attributes {lamina.world_size = 2 : i64} {
  func.func @partial_sums_into_an_op_without_a_model(
      %x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %p = lamina.matmul "fc2" %x, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'lamina_test.unmodelled_scale' op receives partial sums (layout P); only a sync or another linear layer's reduction may take them}}
    %q = lamina_test.unmodelled_scale %p by 0.5 : tensor<4x8xf32>
    %y = lamina.sync "fc2" %q <fwd_post, all_reduce> : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
