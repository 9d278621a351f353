// RUN: lamina-opt %s --convert-shard-to-lamina-mpi | FileCheck %s

// On a grid of several axes, each collective runs along the axis it names:
// the runtime's axis follows the axis's name in lamina.grid (dp 0, pp 1,
// tp 2), whatever its position.
module attributes {lamina.grid = {dp = 2 : i64, pp = 1 : i64, tp = 2 : i64}} {
  shard.grid @lamina_grid(shape = 2x1x2) {sym_visibility = "private"}

  // CHECK-LABEL: func.func @per_axis
  // CHECK: %[[TP:.+]] = arith.constant 2 : i64
  // CHECK: call @laminaMpiAllReduce_f32(%{{.*}}, %{{.*}}, %[[TP]])
  // CHECK: %[[DP:.+]] = arith.constant 0 : i64
  // CHECK: call @laminaMpiAllReduce_f32(%{{.*}}, %{{.*}}, %[[DP]])
  // CHECK: %[[DIM:.+]] = arith.constant 1 : i64
  // CHECK: %[[TP2:.+]] = arith.constant 2 : i64
  // CHECK: call @laminaMpiAllGather_f32(%{{.*}}, %{{.*}}, %[[DIM]], %[[TP2]])
  func.func @per_axis(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
    %0 = shard.all_reduce %x on @lamina_grid grid_axes = [2] : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = shard.all_reduce %0 on @lamina_grid grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
    %2 = shard.all_gather %1 on @lamina_grid grid_axes = [2] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
    return %1, %2 : tensor<4x8xf32>, tensor<4x16xf32>
  }

  // The rank along one axis: its block of a slice, a dropout's stream.
  // CHECK-LABEL: func.func @rank_on_axis
  // CHECK: %[[AXIS:.+]] = arith.constant 2 : i64
  // CHECK: %[[RANK64:.+]] = call @laminaMpiAxisRank(%[[AXIS]]) : (i64) -> i64
  // CHECK: arith.index_cast %[[RANK64]] : i64 to index
  // CHECK: %[[PP:.+]] = arith.constant 1 : i64
  // CHECK: call @laminaMpiAxisRank(%[[PP]]) : (i64) -> i64
  func.func @rank_on_axis() -> (index, index) {
    %0 = shard.process_multi_index on @lamina_grid axes = [2] : index
    %1 = shard.process_multi_index on @lamina_grid axes = [1] : index
    return %0, %1 : index, index
  }
}
