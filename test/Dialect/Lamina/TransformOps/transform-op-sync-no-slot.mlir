// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics

// A fwd_post sync on a layer other than the linear family and fused QKV.
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'ln'}}
    %0 = lamina.layer_norm "ln" %x weight %g eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %ln = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{'lamina.layer_norm' has no fwd_post sync slot; sync its outputs with lamina.sync}}
      transform.lamina.sync %ln "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

// The same with the LayerNorm weight marked sharded: still no slot.
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm_sharded_weight(%x: tensor<4x16xf32>, %g: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    // expected-note @+1 {{layer 'ln'}}
    %0 = lamina.layer_norm "ln" %x weight %g eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %ln = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
      // expected-error @+1 {{'lamina.layer_norm' has no fwd_post sync slot; sync its outputs with lamina.sync}}
      transform.lamina.sync %ln "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}
