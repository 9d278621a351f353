// RUN: lamina-opt %s --lamina-partition --split-input-file | FileCheck %s

// On a grid of data × pipeline × tensor ranks the program is cut along the
// tensor axis alone, by its size (2 of the 8 ranks); the grid keeps every
// axis in lamina.grid's order, and the collectives and the rank keying a
// sharded dropout's stream name the tensor axis's place in it.
// CHECK-LABEL: module attributes {lamina.grid = {dp = 2 : i64, pp = 2 : i64, tp = 2 : i64}, lamina.partitioned}
// CHECK: shard.grid @lamina_grid(shape = 2x2x2) {sym_visibility = "private"}
// CHECK-LABEL: func.func @sequence_parallel
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[S:.+]]: i64, %[[W1:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> (tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>})
// CHECK: %[[RANK:.+]] = shard.process_multi_index on @lamina_grid axes = [2] : index
// CHECK: %[[XG:.+]] = shard.all_gather %[[X]] on @lamina_grid grid_axes = [2] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[Y:.+]] = lamina.matmul "fc2"
// CHECK: %[[RS:.+]] = shard.reduce_scatter %[[Y]] on @lamina_grid grid_axes = [2] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: lamina.dropout "drop" %[[RS]] <p = 0.1, training, shard_axis = 0, shards = 2> seed %[[S]] rank %[[RANK]] : tensor<4x8xf32>
module attributes {lamina.grid = {dp = 2, pp = 2, tp = 2}} {
  func.func @sequence_parallel(
      %x: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %seed: i64,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<8x8xf32> {
    %0 = lamina.sync "fc1" %x <fwd_pre, all_gather, axis = 0> : tensor<8x8xf32>
    %1 = lamina.matmul "fc1" %0, %w1 : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
    %2 = lamina.activation "fc1" relu %1 : tensor<8x16xf32>
    %3 = lamina.matmul "fc2" %2, %w2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %4 = lamina.sync "fc2" %3 <fwd_post, reduce_scatter, axis = 0> : tensor<8x8xf32>
    %5 = lamina.dropout "drop" %4 <p = 0.1, training> seed %seed : tensor<8x8xf32>
    return %5 : tensor<8x8xf32>
  }
}

// -----

// The tensor axis need not come last: its place in the grid is named. A
// layout replicated on the data axis is the tensor axis's alone.
// CHECK-LABEL: module attributes {lamina.grid = {dp = 2 : i64, tp = 2 : i64, xp = 1 : i64}, lamina.partitioned}
// CHECK: shard.grid @lamina_grid(shape = 2x2x1)
// CHECK-LABEL: func.func @row_parallel
// CHECK-SAME: %{{.+}}: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}
// CHECK: shard.all_reduce %{{.+}} on @lamina_grid grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
module attributes {lamina.grid = {dp = 2, tp = 2, xp = 1}} {
  func.func @row_parallel(%x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: R, tp: S(1)]>}) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc" %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %1 = lamina.sync "fc" %0 <fwd_post, all_reduce> : tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

// A grid whose tensor axis has one rank: nothing to cut.
// CHECK-LABEL: module attributes {lamina.grid = {dp = 4 : i64, tp = 1 : i64}} {
// CHECK-NOT: shard.grid
// CHECK-NOT: lamina.partitioned
module attributes {lamina.grid = {dp = 4, tp = 1}} {
  func.func @replica(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
