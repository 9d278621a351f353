// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// The LNS variant: the layer's parameters become LNS arguments (the program
// takes their codes), the input is encoded, the layer computes on LNS
// numbers with the same path and sync, and the result is decoded.
// CHECK-LABEL: func.func @to_lns
// CHECK-SAME: (%[[XF:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8x!lns.num<f = 10>>, %[[B:.+]]: tensor<16x!lns.num<f = 10>>) -> tensor<4x16xf32>
// CHECK: %[[X:.+]] = lns.encode %[[XF]] : tensor<4x8xf32> -> tensor<4x8x!lns.num<f = 10>>
// CHECK-NOT: lns.encode
// CHECK: %[[L:.+]] = lamina.linear_sync "fc" %[[X]], %[[W]] sync <fwd_post, all_reduce> bias %[[B]] {lamina.checkpoint}
// CHECK: lns.decode %[[L]] : tensor<4x16x!lns.num<f = 10>> -> tensor<4x16xf32>
func.func @to_lns(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_sync "fc" %x, %w sync <fwd_post, all_reduce> bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %l = transform.lamina.replace %fc "lns" f 10 : (!transform.any_op) -> !transform.any_op
    transform.lamina.checkpoint %l : !transform.any_op
    transform.yield
  }
}

// -----

// A weight the program also reads elsewhere, or computes, stays a float
// and is encoded where the layer reads it.
// CHECK-LABEL: func.func @shared_weight
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>)
// CHECK: lns.encode %[[X]]
// CHECK: %[[WL:.+]] = lns.encode %[[W]] : tensor<8x8xf32> -> tensor<8x8x!lns.num<f = 12>>
// CHECK: lamina.linear_sync "fc" %{{.*}}, %[[WL]] :
func.func @shared_weight(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0, %w : tensor<4x8xf32>, tensor<8x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %l = transform.lamina.replace %fc "lns" f 12 : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// CHECK-LABEL: func.func @to_fused
// CHECK: lamina.fused_linear "fc" %{{.*}}, %{{.*}} bias %{{.*}} activation relu
func.func @to_fused(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %l = transform.lamina.replace %fc "fused_linear" : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
