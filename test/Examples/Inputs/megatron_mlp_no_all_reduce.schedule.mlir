// The Megatron MLP recipe with its fc2 all-reduce removed.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc1 = transform.lamina.match %root path "h.0.mlp.fc_in" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc1 "weight" axis 0 : !transform.any_op
    transform.lamina.shard %fc1 "bias" axis 0 : !transform.any_op
    %fc2 = transform.lamina.match %root path "h.0.mlp.fc_out" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc2 "weight" axis 1 : !transform.any_op
    transform.yield
  }
}
