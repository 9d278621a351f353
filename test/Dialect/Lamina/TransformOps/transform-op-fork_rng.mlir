// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// A column-parallel layer's dropout switches to the rank-keyed stream.
// CHECK-LABEL: func.func @fork
// CHECK: lamina.linear_dropout "fc" {{.*}} dropout <p = 0.1, training, offset = 2, fork_rng> seed
module attributes {lamina.world_size = 2 : i64} {
  func.func @fork(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %b: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>}, %s: i64) -> tensor<4x16xf32> {
    %0 = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training, offset = 2> seed %s : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      transform.lamina.fork_rng %fc : !transform.any_op
      transform.yield
    }
  }
}

// -----

// A replicated output would get a different mask on every rank.
module attributes {lamina.world_size = 2 : i64} {
  func.func @replicated(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: i64) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training> seed %s : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{fork_rng on a replicated value: every rank would drop a different mask of the same value; shard the layer first}}
      transform.lamina.fork_rng %fc : !transform.any_op
      transform.yield
    }
  }
}

// -----

func.func @no_dropout(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{fork_rng applies to layers with a dropout}}
    transform.lamina.fork_rng %fc : !transform.any_op
    transform.yield
  }
}
