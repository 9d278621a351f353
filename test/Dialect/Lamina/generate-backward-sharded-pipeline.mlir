// RUN: lamina-opt %s --lamina-generate-backward="constants=0" | FileCheck %s

// Tensor parallelism inside pipeline stages: the program is partitioned
// (the cut stays on fc1's matmul), and the backward of each rank's program
// has its stages in reverse order: fc2's (weight gradient last, cut), then
// fc1's; each gradient is this rank's block.
// CHECK-LABEL: func.func @main(
// CHECK: lamina.matmul "fc1" %{{.+}} {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: shard.all_reduce
// CHECK-LABEL: func.func @main_backward
// CHECK-SAME: -> (tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, tensor<8x4xf32> {lamina.layout = #lamina.layout<S(1)>})
// CHECK-SAME: attributes {lamina.pipeline_reversed}
// CHECK: lamina.matmul "fc2" {{.*}} -> tensor<4x4xf32>
// CHECK: %[[DW2:.+]] = lamina.matmul "fc2" {{.*}} {lamina.pipeline_cut} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[DW1:.+]] = lamina.matmul "fc1" {{.*}} -> tensor<4x8xf32>
// CHECK: return %[[DW1]], %[[DW2]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %w2: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc1" %x, %w1 {lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}
