// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @annotate
// CHECK-SAME: %{{.*}}: tensor<16x8xf32> {lamina.annotations = {shared_with = "lm_head", tied = true}}
func.func @annotate(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    transform.lamina.annotate %fc "weight" {tied = true} : !transform.any_op
    transform.lamina.annotate %fc "weight" {shared_with = "lm_head"} : !transform.any_op
    transform.yield
  }
}

// -----

func.func @missing(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{the layer has no parameter 'scale'}}
    transform.lamina.annotate %fc "scale" {tied = true} : !transform.any_op
    transform.yield
  }
}
