// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @decompose
// CHECK: lamina.linear_separate_bias "fc" %{{.*}}, %{{.*}} bias %{{.*}}
// CHECK-NOT: lamina.linear "fc"
func.func @decompose(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %sep = transform.lamina.decompose %fc : (!transform.any_op) -> !transform.any_op
    // The returned handle points to the new layer.
    transform.lamina.checkpoint %sep : !transform.any_op
    transform.yield
  }
}

// -----

func.func @no_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{the layer has no bias to separate}}
    %sep = transform.lamina.decompose %fc : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @not_linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{decompose applies to nn.Linear layers (lamina.linear)}}
    %sep = transform.lamina.decompose %fc : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @after_shard(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'fc'}}
    %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{decompose must come before shard: the weight is already sharded}}
      %sep = transform.lamina.decompose %fc : (!transform.any_op) -> !transform.any_op
      transform.yield
    }
  }
}
