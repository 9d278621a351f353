// A schedule whose entry holds an op that is not a transform op.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %c = arith.constant 1 : i64
    transform.yield
  }
}
