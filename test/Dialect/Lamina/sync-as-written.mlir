// RUN: lamina-opt %s --lamina-generate-backward --split-input-file | FileCheck %s
// RUN: lamina-opt %s --split-input-file --verify-diagnostics --lamina-check-layouts --lamina-check-gradient-layouts -o /dev/null

// A model's own code all-reducing a replicated value (Slapo's
// reduce_forward_output in an unsharded forward): the sum of the identical
// replicas, as eager code computes it, and the identity backward; its
// reduce_backward_grad on the input all-reduces the whole gradient. Per
// rank: y = Σ_ranks x·w (world size times x·w), dx = Σ_ranks dy·wᵀ.
// CHECK-LABEL: func.func @main_forward(
// CHECK: %[[P:.+]] = lamina.matmul "fc"
// CHECK: %[[Y:.+]] = shard.all_reduce %[[P]] on @lamina_grid
// CHECK-LABEL: func.func @main_backward(
// CHECK: %[[DX:.+]] = lamina.matmul "fc" %{{.+}}, %{{.+}}
// CHECK: %[[SUM:.+]] = shard.all_reduce %[[DX]] on @lamina_grid
// CHECK: return %[[SUM]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %c = lamina.sync %x <bwd_post, all_reduce> {lamina.as_written} : tensor<4x8xf32>
    %p = lamina.linear "fc" %c, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = lamina.sync %p <fwd_post, all_reduce> {lamina.as_written} : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
