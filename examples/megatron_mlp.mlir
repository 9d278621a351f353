// A GPT-2 MLP (fc_in with GELU, fc_out) to be scheduled tensor-parallel on
// 2 ranks with examples/megatron_mlp.schedule.mlir.
module attributes {lamina.world_size = 2 : i64} {
  func.func @mlp(%x: tensor<16x64xf32>,
                 %w_in: tensor<256x64xf32>, %b_in: tensor<256xf32>,
                 %w_out: tensor<64x256xf32>, %b_out: tensor<64xf32>) -> tensor<16x64xf32> {
    %h = lamina.linear_act "h.0.mlp.fc_in" %x, %w_in bias %b_in activation gelu_tanh
        : (tensor<16x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<16x256xf32>
    %y = lamina.linear "h.0.mlp.fc_out" %h, %w_out bias %b_out
        : (tensor<16x256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %y : tensor<16x64xf32>
  }
}
