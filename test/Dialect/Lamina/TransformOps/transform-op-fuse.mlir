// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// A layer becomes one fused op with its epilogue, and lowers to a single
// matmul + epilogue loop nest writing the output once.
// CHECK-LABEL: func.func @fuse
// CHECK: lamina.fused_linear "fc" %{{.*}}, %{{.*}} bias %{{.*}} activation gelu_tanh {lamina.checkpoint}
// CHECK-NOT: lamina.linear_act
func.func @fuse(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %fused = transform.lamina.fuse %fc : (!transform.any_op) -> !transform.any_op
    transform.lamina.checkpoint %fused : !transform.any_op
    transform.yield
  }
}

// -----

// RUN: lamina-opt %s --transform-interpreter --split-input-file --convert-lamina-to-linalg | FileCheck %s --check-prefix=LOOPS
// LOOPS-LABEL: func.func @one_loop_nest
// LOOPS-COUNT-1: linalg.matmul
// LOOPS-COUNT-1: linalg.generic {{.*}}lamina.stage = #lamina<stage epilogue>
// LOOPS-NOT: linalg.generic
func.func @one_loop_nest(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: i64) -> tensor<4x16xf32> {
  %0 = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training> seed %s : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %fused = transform.lamina.fuse %fc : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A decomposed layer's matmul, matched by op name, absorbs its whole
// single-use chain bias_add → activation → dropout into one fused_linear
// carrying that epilogue, the path and the seed; the pieces are gone.
// CHECK-LABEL: func.func @matmul_chain
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[S:[a-z0-9]+]]: i64)
// CHECK-NOT: lamina.matmul
// CHECK: %[[F:.+]] = lamina.fused_linear "fc" %[[X]], %[[W]] bias %[[B]] activation gelu_tanh dropout <p = 0.1, training> seed %[[S]] {lamina.checkpoint} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
// CHECK-NOT: lamina.bias_add
// CHECK-NOT: lamina.activation
// CHECK-NOT: lamina.dropout
// CHECK: return %[[F]] : tensor<4x16xf32>
// One loop nest again, as for a layer.
// LOOPS-LABEL: func.func @matmul_chain
// LOOPS-COUNT-1: linalg.matmul
// LOOPS-COUNT-1: linalg.generic {{.*}}lamina.stage = #lamina<stage epilogue>
// LOOPS-NOT: linalg.generic
func.func @matmul_chain(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: i64) -> tensor<4x16xf32> {
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.bias_add "fc" %0, %b : tensor<4x16xf32>, tensor<16xf32>
  %2 = lamina.activation "fc" gelu_tanh %1 : tensor<4x16xf32>
  %3 = lamina.dropout "fc" %2 <p = 0.1, training> seed %s : tensor<4x16xf32>
  return %3 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %mm = transform.structured.match ops{["lamina.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %fused = transform.lamina.fuse %mm : (!transform.any_op) -> !transform.any_op
    // The handle returned points to the fused op.
    transform.lamina.checkpoint %fused : !transform.any_op
    transform.yield
  }
}

// -----

// The matmul of a row-parallel layer: its fwd_post all-reduce is absorbed
// in the sync slot, before the bias (LinearWithSyncFunc order). The biased value has a
// second user, so the chain stops at the bias and the activation stays.
// CHECK-LABEL: func.func @matmul_sync_bias
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x16xf32>, %[[W:[a-z0-9]+]]: tensor<8x16xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>)
// CHECK-NOT: lamina.matmul
// CHECK: %[[F:.+]] = lamina.fused_linear "fc2" %[[X]], %[[W]] sync <fwd_post, all_reduce> bias %[[B]] : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: lamina.sync
// CHECK-NOT: lamina.bias_add
// CHECK: %[[A:.+]] = lamina.activation relu %[[F]] : tensor<4x8xf32>
// CHECK: arith.addf %[[A]], %[[F]]
// LOOPS-LABEL: func.func @matmul_sync_bias
func.func @matmul_sync_bias(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = lamina.matmul "fc2" %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %1 = lamina.sync "fc2" %0 <fwd_post, all_reduce> : tensor<4x8xf32>
  %2 = lamina.bias_add "fc2" %1, %b : tensor<4x8xf32>, tensor<8xf32>
  %3 = lamina.activation relu %2 : tensor<4x8xf32>
  %4 = arith.addf %3, %2 : tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %mm = transform.structured.match ops{["lamina.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %fused = transform.lamina.fuse %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A reduce_scatter sync alone: the sync is the whole epilogue.
// CHECK-LABEL: func.func @matmul_sync_only
// CHECK: %[[F:.+]] = lamina.fused_linear "fc2" %{{.*}}, %{{.*}} sync <fwd_post, reduce_scatter, axis = 0> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[F]]
func.func @matmul_sync_only(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %0 = lamina.matmul "fc2" %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %1 = lamina.sync "fc2" %0 <fwd_post, reduce_scatter, axis = 0> : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %mm = transform.structured.match ops{["lamina.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %fused = transform.lamina.fuse %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// An activation straight after the matmul (no bias): absorbed on its own.
// CHECK-LABEL: func.func @matmul_activation
// CHECK: %[[F:.+]] = lamina.fused_linear "g" %{{.*}}, %{{.*}} activation gelu_erf : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NOT: lamina.activation
// CHECK: return %[[F]]
func.func @matmul_activation(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = lamina.matmul "g" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.activation gelu_erf %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %mm = transform.structured.match ops{["lamina.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %fused = transform.lamina.fuse %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
