// RUN: lamina-opt %s "--lamina-check-gradient-layouts=constants=0" | FileCheck %s

// The Megatron MLP without fc1's bwd_post sync, its input x (argument 0)
// held constant (data that requires no gradient): the partial gradient of x
// is never computed, and the parameters' gradients are right. Accepted with
// constants=0 (rejected without: check-gradient-layouts-invalid.mlir).
// CHECK-LABEL: func.func @no_bwd_post_on_data
module attributes {lamina.world_size = 2 : i64} {
  func.func @no_bwd_post_on_data(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}
