// Four pipeline stages, one layer each, on four ranks; the residual %h0
// travels from rank 0 through rank 2 to rank 3 (Slapo:
// sch[f"l{i}"].cut_pipeline_stage() for i in 0, 1, 2).
//   mpirun.mpich -np 4 build/bin/lamina-run examples/mlp_stack.mlir --entry=stack \
//     --schedule=examples/pipeline_stack.schedule.mlir --random-inputs
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %cuts = transform.lamina.match %root regex "l[012]" : (!transform.any_op) -> !transform.any_op
    transform.lamina.cut_pipeline_stage %cuts : !transform.any_op
    transform.yield
  }
}
