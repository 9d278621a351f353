// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// Match by path and by regex; the matched layers are checkpointed so the
// result is visible in the IR.
// CHECK-LABEL: func.func @mlp
// CHECK: lamina.linear_act "h.0.mlp.fc_in" {{.*}} {lamina.checkpoint}
// CHECK: lamina.linear "h.0.mlp.fc_out" {{.*}} {lamina.checkpoint}
// CHECK: lamina.linear "h.0.attn.c_proj" {{[^{]*}} -> tensor<4x8xf32>{{$}}
// CHECK-NEXT: return
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %w3: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = lamina.linear_act "h.0.mlp.fc_in" %x, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = lamina.linear "h.0.mlp.fc_out" %0, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %2 = lamina.linear "h.0.attn.c_proj" %1, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc_in = transform.lamina.match %root path "h.0.mlp.fc_in" : (!transform.any_op) -> !transform.any_op
    transform.lamina.checkpoint %fc_in : !transform.any_op
    %out = transform.lamina.match %root regex "h\\.[0-9]+\\.mlp\\.fc_o.*" : (!transform.any_op) -> !transform.any_op
    transform.lamina.checkpoint %out : !transform.any_op
    transform.yield
  }
}

// -----

func.func @unknown_path(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear "h.0.mlp.fc_in" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{no layer with path 'h.1.mlp.fc_in'}}
    %l = transform.lamina.match %root path "h.1.mlp.fc_in" : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{takes exactly one of 'path' and 'regex'}}
    %l = transform.lamina.match %root : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{invalid regex}}
    %l = transform.lamina.match %root regex "h.(0" : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
