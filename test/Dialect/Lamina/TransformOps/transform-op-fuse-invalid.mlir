// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics

func.func @not_a_linear(%x: tensor<2x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>) -> tensor<2x2x4xf32> {
  // expected-note @+1 {{layer 'qkv'}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 2 world_size 1 : (tensor<2x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  return %q : tensor<2x2x4xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %l = transform.lamina.match %root path "qkv" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{fuse applies to linear layers}}
    %f = transform.lamina.fuse %l : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
