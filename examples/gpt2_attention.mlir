// The projections of a GPT-2 attention block on [batch, sequence, hidden] =
// [2, 16, 64] with 4 heads: Slapo's FusedQKV (q, k, v interleaved per head)
// and the output projection. The per-head mix between them (q·k + v, an
// element-wise stand-in for the attention scores) keeps heads independent,
// so a head-sharded program needs no communication until the output
// projection. Written for 2 ranks; examples/megatron_attention.schedule.mlir
// shards it:
//   mpirun.mpich -np 2 build/bin/lamina-run examples/gpt2_attention.mlir \
//     --entry=attention --schedule=examples/megatron_attention.schedule.mlir \
//     --random-inputs
module attributes {lamina.world_size = 2 : i64} {
  func.func @attention(%x: tensor<2x16x64xf32>,
                       %w_qkv: tensor<192x64xf32>, %b_qkv: tensor<192xf32>,
                       %w_out: tensor<64x64xf32>, %b_out: tensor<64xf32>)
      -> tensor<2x16x64xf32> {
    %q, %k, %v = lamina.fused_qkv "h.0.attn.qkv" %x, %w_qkv bias %b_qkv
        num_heads 4 world_size 1
        : (tensor<2x16x64xf32>, tensor<192x64xf32>, tensor<192xf32>)
          -> (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>)
    %qk = arith.mulf %q, %k : tensor<2x16x4x16xf32>
    %mix = arith.addf %qk, %v : tensor<2x16x4x16xf32>
    %heads = tensor.collapse_shape %mix [[0], [1], [2, 3]]
        : tensor<2x16x4x16xf32> into tensor<2x16x64xf32>
    %y = lamina.linear "h.0.attn.out_proj" %heads, %w_out bias %b_out
        : (tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    return %y : tensor<2x16x64xf32>
  }
}
