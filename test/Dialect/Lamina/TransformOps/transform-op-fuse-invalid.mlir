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

// -----

// The matmul result feeds two ops: neither can be absorbed.
func.func @matmul_two_users(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.bias_add "fc" %0, %b : tensor<4x16xf32>, tensor<16xf32>
  %2 = lamina.activation relu %0 : tensor<4x16xf32>
  return %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %mm = transform.structured.match ops{["lamina.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{the matmul has no epilogue to absorb (its result has no single sync, bias_add, activation or dropout user)}}
    %f = transform.lamina.fuse %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A bwd_post sync is the identity forward: it is no epilogue step.
func.func @matmul_bwd_post(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.sync %0 <bwd_post, all_reduce> : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %mm = transform.structured.match ops{["lamina.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{the matmul has no epilogue to absorb}}
    %f = transform.lamina.fuse %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A primitive piece other than a matmul.
func.func @not_a_layer(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.bias_add "fc" %x, %b : tensor<4x16xf32>, tensor<16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %op = transform.structured.match ops{["lamina.bias_add"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{fuse applies to linear layers and lamina.matmul}}
    %f = transform.lamina.fuse %op : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A layer, but not a linear one.
func.func @layer_norm(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'ln'}}
  %0 = lamina.layer_norm "ln" %x weight %g eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %l = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{fuse applies to linear layers and lamina.matmul}}
    %f = transform.lamina.fuse %l : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
