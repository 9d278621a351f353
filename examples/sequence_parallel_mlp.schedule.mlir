// Megatron's sequence-parallel MLP: each rank holds a block of the tokens
// (axis 1 of [batch, sequence, hidden]), all-gathered into the
// column-parallel fc1 and reduce-scattered out of the row-parallel fc2, so
// the output stays sharded by sequence; its dropout draws every element by
// its index in the whole tensor, each rank's mask a block of the unsharded
// one.
//   mpirun.mpich -np 2 build/bin/lamina-run examples/gpt2_mlp.mlir --entry=mlp \
//     --schedule=examples/sequence_parallel_mlp.schedule.mlir --random-inputs
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc1 = transform.lamina.match %root path "h.0.mlp.fc_in" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc1 "input" axis 1 : !transform.any_op
    transform.lamina.shard %fc1 "weight" axis 0 : !transform.any_op
    transform.lamina.shard %fc1 "bias" axis 0 : !transform.any_op
    transform.lamina.sync %fc1 "fwd_pre" "all_gather" axis 1 : !transform.any_op
    %fc2 = transform.lamina.match %root path "h.0.mlp.fc_out" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc2 "weight" axis 1 : !transform.any_op
    transform.lamina.sync %fc2 "fwd_post" "reduce_scatter" axis 1 : !transform.any_op
    transform.yield
  }
}
