// RUN: lamina-opt %s --lamina-partition | FileCheck %s

// Queries sharded by heads on 2 ranks keep their layout through the rotary
// embedding: each rank rotates its 2 heads with the whole (replicated,
// broadcast over heads) tables, and returns its block.
// CHECK-LABEL: func.func @rope_by_heads
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x2x8xf32>
// CHECK: %[[C:.+]] = arith.constant dense<5.000000e-01> : tensor<1x8x1x4xf32>
// CHECK: %[[S:.+]] = arith.constant dense<2.500000e-01> : tensor<1x8x1x4xf32>
// CHECK: %[[Y:.+]] = lamina.rope %[[Q]], %[[C]], %[[S]] interleaved : tensor<1x8x2x8xf32>, tensor<1x8x1x4xf32>
// CHECK: return %[[Y]] : tensor<1x8x2x8xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @rope_by_heads(%q: tensor<1x8x4x8xf32> {lamina.layout = #lamina.layout<S(2)>}) -> tensor<1x8x4x8xf32> {
    %c = arith.constant dense<0.5> : tensor<1x8x1x4xf32>
    %s = arith.constant dense<0.25> : tensor<1x8x1x4xf32>
    %y = lamina.rope %q, %c, %s interleaved : tensor<1x8x4x8xf32>, tensor<1x8x1x4xf32>
    return %y : tensor<1x8x4x8xf32>
  }
}
