// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// Recorded on the layer; the forward computation is unchanged.
// CHECK-LABEL: func.func @checkpoint
// CHECK: lamina.linear_act "fc" {{.*}} activation relu {lamina.checkpoint}
func.func @checkpoint(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    transform.lamina.checkpoint %fc : !transform.any_op
    transform.yield
  }
}

// -----

func.func @not_a_layer(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %x, %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %add = transform.structured.match ops{["arith.addf"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{checkpoint applies to layers, not 'arith.addf'}}
    transform.lamina.checkpoint %add : !transform.any_op
    transform.yield
  }
}
