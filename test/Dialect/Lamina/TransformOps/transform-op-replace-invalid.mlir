// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics

func.func @act_to_lns(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{LNS layers have no activation or dropout to carry over}}
    %l = transform.lamina.replace %fc "lns" f 10 : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @no_base(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{the LNS variant needs its base: f N}}
    %l = transform.lamina.replace %fc "lns" : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @unknown_variant(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{layer 'fc'}}
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{unknown variant 'int8' (expected "fused_linear" or "lns")}}
    %l = transform.lamina.replace %fc "int8" : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
