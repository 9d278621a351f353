// RUN: lamina-opt %s --lamina-generate-backward | FileCheck %s
// RUN: lamina-opt %s --lamina-generate-backward --lamina-split-pipeline-stages | FileCheck %s --check-prefix=SPLIT

// Two pipeline stages (a cut after fc1). The forward keeps the cut on fc1's
// last piece; the backward differentiates fc2 first and ends its first
// stage after fc2's last rule (dW2), then fc1; its stages run in reverse
// rank order: backward stage 0 (fc2) on rank 1, stage 1 (fc1) on rank 0.

// CHECK-LABEL: func.func @main_forward(
// CHECK: lamina.activation "fc1" gelu_tanh %{{.*}} {lamina.pipeline_cut}
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: attributes {lamina.pipeline_reversed}
// CHECK: lamina.matmul "fc2"
// CHECK: lamina.matmul "fc2" {{.*}} {lamina.pipeline_cut}
// CHECK-NOT: lamina.pipeline_cut
// CHECK: lamina.activation_grad "fc1"
// CHECK: lamina.matmul "fc1"
// CHECK: lamina.matmul "fc1"
// CHECK: return

// SPLIT: func.func @main_backward_stage0({{.*}} attributes {lamina.pipeline_stage = 1 : i64}
// SPLIT: lamina.matmul "fc2"
// SPLIT: func.func @main_backward_stage1({{.*}} attributes {lamina.pipeline_stage = 0 : i64}
// SPLIT: lamina.activation_grad "fc1"
// SPLIT-LABEL: func.func @main_backward(
// SPLIT: call @main_backward_stage0
// SPLIT: call @main_backward_stage1
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %0 = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = lamina.linear "fc2" %0, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
