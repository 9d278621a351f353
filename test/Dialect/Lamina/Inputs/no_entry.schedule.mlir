// A transform library without @__transform_main.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @other(%root: !transform.any_op {transform.readonly}) {
    transform.yield
  }
}
