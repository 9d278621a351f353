// Megatron's tensor-parallel attention projections: the fused QKV column
// parallel on axis 0 (each rank the complete q, k, v of num_heads / 2
// heads), bwd_post all-reduce of its input gradient; the output projection
// row parallel with its all-reduce before the bias.
//   mpirun.mpich -np 2 build/bin/lamina-run examples/gpt2_attention.mlir \
//     --entry=attention --schedule=examples/megatron_attention.schedule.mlir \
//     --random-inputs
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %qkv = transform.lamina.match %root path "h.0.attn.qkv" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %qkv "weight" axis 0 : !transform.any_op
    transform.lamina.shard %qkv "bias" axis 0 : !transform.any_op
    transform.lamina.sync %qkv "bwd_post" "all_reduce" : !transform.any_op
    %out = transform.lamina.match %root path "h.0.attn.out_proj" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %out "weight" axis 1 : !transform.any_op
    transform.lamina.sync %out "fwd_post" "all_reduce" : !transform.any_op
    transform.yield
  }
}
