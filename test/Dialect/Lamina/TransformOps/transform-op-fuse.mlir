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
// LOOPS-COUNT-1: linalg.generic {{.*}}lamina.stage = "epilogue"
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
