// A GPT-2 MLP (fc_in with GELU, fc_out with residual dropout) on
// [batch, sequence, hidden] = [2, 16, 64], written for 2 ranks. Unscheduled
// it is the whole, unsharded layer; the schedules next to it shard it
// (megatron_mlp.schedule.mlir, sequence_parallel_mlp.schedule.mlir) or cut
// it into pipeline stages (pipeline_mlp.schedule.mlir):
//   mpirun.mpich -np 2 build/bin/lamina-run examples/gpt2_mlp.mlir --entry=mlp \
//     --schedule=examples/megatron_mlp.schedule.mlir --random-inputs
module attributes {lamina.world_size = 2 : i64} {
  func.func @mlp(%x: tensor<2x16x64xf32>,
                 %w_in: tensor<256x64xf32>, %b_in: tensor<256xf32>,
                 %w_out: tensor<64x256xf32>, %b_out: tensor<64xf32>,
                 %seed: i64) -> tensor<2x16x64xf32> {
    %h = lamina.linear_act "h.0.mlp.fc_in" %x, %w_in bias %b_in activation gelu_tanh
        : (tensor<2x16x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
    %y = lamina.linear_dropout "h.0.mlp.fc_out" %h, %w_out bias %b_out
        dropout <p = 0.1, training> seed %seed
        : (tensor<2x16x256xf32>, tensor<64x256xf32>, tensor<64xf32>, i64) -> tensor<2x16x64xf32>
    return %y : tensor<2x16x64xf32>
  }
}
