// RUN: lamina-opt %s --lamina-check-gradient-layouts -verify-diagnostics

// The backward through the model: fc1's column-parallel input gradient is
// partial; without fc1's bwd_post all-reduce it would reach the program's
// input as partial sums, carried back through lamina_test.scale.
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'fc1'}}
  func.func @missing_bwd_post(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %h = lamina.matmul "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %a = lamina_test.scale %h by 2.0 : tensor<4x16xf32>
    %p = lamina.matmul "fc2" %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %q = lamina_test.scale %p by 0.5 : tensor<4x8xf32>
    %y = lamina.sync "fc2" %q <fwd_post, all_reduce> : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
