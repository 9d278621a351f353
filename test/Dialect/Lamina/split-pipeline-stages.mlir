// RUN: lamina-opt %s --lamina-split-pipeline-stages | FileCheck %s

// Two cuts: three stages. The residual input %x is used by stage 2, so
// stages 0 and 1 pass it through; %h0 is used by stages 1 and 2.
// CHECK-LABEL: func.func @block_stage0
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>)
// CHECK-SAME: attributes {lamina.pipeline_stage = 0 : i64}
// CHECK: %[[H0:.+]] = lamina.linear "a" %[[X]], %[[W]] {lamina.pipeline_cut}
// CHECK: return %[[H0]], %[[W]], %[[X]]
// CHECK-LABEL: func.func @block_stage1
// CHECK-SAME: attributes {lamina.pipeline_stage = 1 : i64}
// CHECK: lamina.linear "b"
// CHECK-LABEL: func.func @block_stage2
// CHECK-SAME: attributes {lamina.pipeline_stage = 2 : i64}
// CHECK: arith.addf
// CHECK-LABEL: func.func @block(
// CHECK: %[[S0:.+]]:3 = call @block_stage0(%{{.*}}, %{{.*}})
// CHECK: %[[S1:.+]]:3 = call @block_stage1(%[[S0]]#0, %[[S0]]#1, %[[S0]]#2)
// CHECK: %[[S2:.+]] = call @block_stage2(%[[S1]]#0, %[[S1]]#1, %[[S1]]#2)
// CHECK: return %[[S2]]
func.func @block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h0 = lamina.linear "a" %x, %w {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h1 = lamina.linear "b" %h0, %w {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = arith.addf %h1, %h0 : tensor<4x8xf32>
  %r = arith.addf %s, %x : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
