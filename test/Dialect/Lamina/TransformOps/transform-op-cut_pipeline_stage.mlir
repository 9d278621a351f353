// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @two_layers
// CHECK: lamina.linear "h.0" {{.*}} {lamina.pipeline_cut}
// CHECK: lamina.linear "h.1" {{[^{]*}} -> tensor<4x8xf32>{{$}}
func.func @two_layers(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = lamina.linear "h.0" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = lamina.linear "h.1" %0, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %l = transform.lamina.match %root path "h.0" : (!transform.any_op) -> !transform.any_op
    transform.lamina.cut_pipeline_stage %l : !transform.any_op
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
    // expected-error @+1 {{cut_pipeline_stage applies to layers, not 'arith.addf'}}
    transform.lamina.cut_pipeline_stage %add : !transform.any_op
    transform.yield
  }
}
