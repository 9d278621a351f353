// RUN: lamina-opt %s --split-input-file -verify-diagnostics

// A negative axis is rejected by the verifier (it used to read as a huge
// unsigned axis and crash the primitive).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{'transform.lamina.shard' op axis must be non-negative, got -1}}
    transform.lamina.shard %fc "weight" axis -1 : !transform.any_op
    transform.yield
  }
}

// -----

// 2^63 does not fit a signed 64-bit axis: it wraps to a negative one and is
// rejected the same way.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{'transform.lamina.shard' op axis must be non-negative, got -9223372036854775808}}
    transform.lamina.shard %fc "weight" axis 9223372036854775808 : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{'transform.lamina.shard' op groups must be positive, got 0}}
    transform.lamina.shard %fc "weight" axis 0 groups 0 : !transform.any_op
    transform.yield
  }
}
