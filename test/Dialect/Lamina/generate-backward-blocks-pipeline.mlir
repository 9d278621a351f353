// RUN: lamina-opt %s --lamina-outline-blocks --lamina-generate-backward --lamina-split-pipeline-stages | FileCheck %s

// Three blocks h.i: y = x + gelu(x·Wᵢᵀ), cut into two pipeline stages
// after h.1. The cut moves to h.1's call; the pair's forward is cut there,
// its backward after the call differentiating h.2 (its stage 0 runs on
// the forward's last rank). Split, each stage calls the one block forward
// or backward function: stage 0 of the forward twice (h.0, h.1) and
// stage 1 once (h.2); the backward's stage 0 once (h.2), its stage 1
// twice (h.1, h.0).

// CHECK-LABEL: func.func @main_forward_stage0
// CHECK-SAME: lamina.pipeline_stage = 0
// CHECK: call @h_block_forward({{.+}}) {lamina.module = "h.0"}
// CHECK: call @h_block_forward({{.+}}) {lamina.module = "h.1", lamina.pipeline_cut}
// CHECK-NOT: call @h_block_forward
// CHECK: return
// CHECK-LABEL: func.func @main_forward_stage1
// CHECK-SAME: lamina.pipeline_stage = 1
// CHECK: call @h_block_forward({{.+}}) {lamina.module = "h.2"}
// CHECK-NOT: call @h_block_forward
// CHECK: return
// CHECK-LABEL: func.func @main_forward(
// CHECK: call @main_forward_stage0(
// CHECK: call @main_forward_stage1(
// CHECK-LABEL: func.func @main_backward_stage0
// CHECK-SAME: lamina.pipeline_stage = 1
// CHECK: call @h_block_backward({{.+}}) {lamina.module = "h.2", lamina.pipeline_cut}
// CHECK-NOT: call @h_block_backward
// CHECK: return
// CHECK-LABEL: func.func @main_backward_stage1
// CHECK-SAME: lamina.pipeline_stage = 0
// CHECK: call @h_block_backward({{.+}}) {lamina.module = "h.1"}
// CHECK: call @h_block_backward({{.+}}) {lamina.module = "h.0"}
// CHECK: return
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: lamina.pipeline_reversed
// CHECK: call @main_backward_stage0(
// CHECK: call @main_backward_stage1(
// CHECK-LABEL: func.func private @h_block_forward(
// CHECK-NOT: lamina.pipeline_cut
// CHECK-LABEL: func.func private @h_block_backward(
// CHECK-NOT: lamina.pipeline_cut
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>,
                %w2: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %l0 = lamina.linear "h.0.fc" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a0 = lamina.activation "h.0.act" gelu_tanh %l0 : tensor<4x8xf32>
  %h0 = arith.addf %x, %a0 {lamina.module = "h.0"} : tensor<4x8xf32>
  %l1 = lamina.linear "h.1.fc" %h0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = lamina.activation "h.1.act" gelu_tanh %l1 : tensor<4x8xf32>
  %h1 = arith.addf %h0, %a1 {lamina.module = "h.1", lamina.pipeline_cut} : tensor<4x8xf32>
  %l2 = lamina.linear "h.2.fc" %h1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a2 = lamina.activation "h.2.act" gelu_tanh %l2 : tensor<4x8xf32>
  %h2 = arith.addf %h1, %a2 {lamina.module = "h.2"} : tensor<4x8xf32>
  return %h2 : tensor<4x8xf32>
}
