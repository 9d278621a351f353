// Two pipeline stages: fc_in on rank 0, fc_out on rank 1, the activation
// sent from one to the other (Slapo: sch["h.0.mlp.fc_in"].cut_pipeline_stage()).
//   mpirun.mpich -np 2 build/bin/lamina-run examples/gpt2_mlp.mlir --entry=mlp \
//     --schedule=examples/pipeline_mlp.schedule.mlir --random-inputs
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc1 = transform.lamina.match %root path "h.0.mlp.fc_in" : (!transform.any_op) -> !transform.any_op
    transform.lamina.cut_pipeline_stage %fc1 : !transform.any_op
    transform.yield
  }
}
