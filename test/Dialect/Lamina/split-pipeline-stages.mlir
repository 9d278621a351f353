// RUN: lamina-opt %s --lamina-split-pipeline-stages | FileCheck %s

// Two cuts: three stages. Each stage takes the function arguments it uses
// itself; %h0, used by stages 1 and 2, travels through stage 1.
// CHECK-LABEL: func.func @block_stage0
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-SAME: attributes {lamina.pipeline_stage = 0 : i64}
// CHECK: %[[H0:.+]] = lamina.linear "a" %[[X]], %[[W]] {lamina.pipeline_cut}
// CHECK: return %[[H0]] : tensor<4x8xf32>
// CHECK-LABEL: func.func @block_stage1
// CHECK-SAME: (%[[H0:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-SAME: attributes {lamina.pipeline_stage = 1 : i64}
// CHECK: %[[H1:.+]] = lamina.linear "b" %[[H0]], %[[W]]
// CHECK: return %[[H1]], %[[H0]]
// CHECK-LABEL: func.func @block_stage2
// CHECK-SAME: attributes {lamina.pipeline_stage = 2 : i64}
// CHECK: arith.addf
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32>, %[[W:[^:]+]]: tensor<8x8xf32>
// CHECK: %[[S0:.+]] = call @block_stage0(%[[X]], %[[W]])
// CHECK: %[[S1:.+]]:2 = call @block_stage1(%[[S0]], %[[W]])
// CHECK: %[[S2:.+]] = call @block_stage2(%[[S1]]#0, %[[S1]]#1, %[[X]])
// CHECK: return %[[S2]]
func.func @block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h0 = lamina.linear "a" %x, %w {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h1 = lamina.linear "b" %h0, %w {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = arith.addf %h1, %h0 : tensor<4x8xf32>
  %r = arith.addf %s, %x : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// A value the return uses is a result of the stage computing it, taken from
// there by the caller: %g0 leaves stage 0 once, for stage 1 and the return.
// CHECK-LABEL: func.func @gradients_stage0
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK: %[[G0:.+]] = lamina.linear "a"
// CHECK: return %[[G0]] : tensor<4x8xf32>
// CHECK-LABEL: func.func @gradients_stage1
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-LABEL: func.func @gradients(
// CHECK: %[[S0:.+]] = call @gradients_stage0
// CHECK: %[[S1:.+]] = call @gradients_stage1(%[[S0]],
// CHECK: return %[[S0]], %[[S1]]
func.func @gradients(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g0 = lamina.linear "a" %x, %w {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %g1 = lamina.linear "b" %g0, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %g0, %g1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// Blocks outlined by lamina-outline-blocks: the cut after h.1 is on its
// call. Stage 0 calls the block twice, stage 1 once; the block function
// itself has no cut and stays one function, called from both stages.
// CHECK-LABEL: func.func @outlined_stage0
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W0:.+]]: tensor<8x8xf32>, %[[W1:.+]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-SAME: lamina.pipeline_stage = 0
// CHECK: %[[H0:.+]] = call @h_block(%[[X]], %[[W0]]) {lamina.module = "h.0"}
// CHECK: %[[H1:.+]] = call @h_block(%[[H0]], %[[W1]]) {lamina.module = "h.1", lamina.pipeline_cut}
// CHECK: return %[[H1]]
// CHECK-LABEL: func.func @outlined_stage1
// CHECK-SAME: (%[[H:.+]]: tensor<4x8xf32>, %[[W2:.+]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-SAME: lamina.pipeline_stage = 1
// CHECK: %[[H2:.+]] = call @h_block(%[[H]], %[[W2]]) {lamina.module = "h.2"}
// CHECK: return %[[H2]]
// CHECK-LABEL: func.func @outlined(
// CHECK: %[[S0:.+]] = call @outlined_stage0(
// CHECK: %[[S1:.+]] = call @outlined_stage1(%[[S0]],
// CHECK: return %[[S1]]
// CHECK-LABEL: func.func private @h_block(
// CHECK-NOT: lamina.pipeline_stage
// CHECK: lamina.linear "h.0.fc"
// CHECK-NEXT: return
func.func @outlined(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h0 = func.call @h_block(%x, %w0) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h1 = func.call @h_block(%h0, %w1) {lamina.module = "h.1", lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h2 = func.call @h_block(%h1, %w2) {lamina.module = "h.2"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %h2 : tensor<4x8xf32>
}
func.func private @h_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.block = "h"} {
  %0 = lamina.linear "h.0.fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
