// RUN: lamina-opt %s --lamina-record-result-layouts -verify-diagnostics

// A program the layout rules reject has no host signature.
module attributes {lamina.world_size = 2 : i64} {
  func.func @partial_result(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %y = lamina.matmul %h, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{returns partial sums (layout P) as result 0; add a fwd_post all_reduce sync before returning}}
    return %y : tensor<4x8xf32>
  }
}
