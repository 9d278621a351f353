// Megatron's tensor-parallel MLP (Slapo:
//   fc1.shard("weight", 0); fc1.shard("bias", 0); fc1.sync("bwd_post", "all_reduce")
//   fc2.shard("weight", 1); fc2.sync("fwd_post", "all_reduce")):
// y = dropout(allreduce(gelu(x·W1ᵣᵀ + b1ᵣ)·W2ᵣᵀ) + b2), the dropout on a
// replicated value drawing the same mask on every rank.
//   mpirun.mpich -np 2 build/bin/lamina-run examples/gpt2_mlp.mlir --entry=mlp \
//     --schedule=examples/megatron_mlp.schedule.mlir --random-inputs
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc1 = transform.lamina.match %root path "h.0.mlp.fc_in" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc1 "weight" axis 0 : !transform.any_op
    transform.lamina.shard %fc1 "bias" axis 0 : !transform.any_op
    transform.lamina.sync %fc1 "bwd_post" "all_reduce" : !transform.any_op
    %fc2 = transform.lamina.match %root path "h.0.mlp.fc_out" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc2 "weight" axis 1 : !transform.any_op
    transform.lamina.sync %fc2 "fwd_post" "all_reduce" : !transform.any_op
    transform.yield
  }
}
