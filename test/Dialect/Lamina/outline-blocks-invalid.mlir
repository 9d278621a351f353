// RUN: lamina-opt %s --lamina-outline-blocks -verify-diagnostics

// Instances of a sharded program are compared with their values' layouts:
// a layout error is reported as lamina-check-layouts reports it.
module attributes {lamina.world_size = 2 : i64} {
  func.func @double_bias(%x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w0: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}, %b0: tensor<8xf32>,
      %w1: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}, %b1: tensor<8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    // expected-error @+1 {{adds its bias to partial sums (layout P) of layer 'h.0.fc2': every rank would add it once more (Slapo's double-bias bug); add a fwd_post all_reduce sync between the matmul and the bias}}
    %0 = lamina.linear "h.0.fc2" %x, %w0 bias %b0 : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = lamina.linear "h.1.fc2" %x, %w1 bias %b1 : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
