// RUN: lamina-opt %s --convert-shard-to-lamina-mpi | FileCheck %s

// CHECK-NOT: shard.
// CHECK-DAG: func.func private @laminaMpiAxisRank(i64) -> i64
// CHECK-DAG: func.func private @laminaMpiAllReduce_f32(memref<*xf32>, memref<*xf32>, i64)
// CHECK-DAG: func.func private @laminaMpiAllReduceMax_f32(memref<*xf32>, memref<*xf32>, i64)
// CHECK-DAG: func.func private @laminaMpiAllGather_bf16(memref<*xbf16>, memref<*xbf16>, i64, i64)
// CHECK-DAG: func.func private @laminaMpiReduceScatter_f32(memref<*xf32>, memref<*xf32>, i64, i64)
shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}

// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK: %[[IN:.+]] = bufferization.to_buffer %[[X]] read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[A:.+]] = memref.cast %[[IN]] : memref<4x8xf32> to memref<*xf32>
// CHECK: %[[B:.+]] = memref.cast %[[OUT]] : memref<4x8xf32> to memref<*xf32>
// The grid axis travels last, as the runtime's axis: 2 is the tensor axis,
// the one axis of a grid without names.
// CHECK: %[[TP:.+]] = arith.constant 2 : i64
// CHECK: call @laminaMpiAllReduce_f32(%[[A]], %[[B]], %[[TP]]) : (memref<*xf32>, memref<*xf32>, i64) -> ()
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4x8xf32> to tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @all_reduce(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = shard.all_reduce %x on @lamina_grid grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Maxima (a vocabulary-parallel loss's row maxima) have their own entry.
// CHECK-LABEL: func.func @all_reduce_max
// CHECK: call @laminaMpiAllReduceMax_f32(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<*xf32>, memref<*xf32>, i64) -> ()
func.func @all_reduce_max(%x: tensor<16xf32>) -> tensor<16xf32> {
  %0 = shard.all_reduce %x on @lamina_grid grid_axes = [0] reduction = max : tensor<16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// The gather and scatter dims travel as i64 arguments, before the grid axis.
// CHECK-LABEL: func.func @gather_scatter
// CHECK: %[[DIM1:.+]] = arith.constant 1 : i64
// CHECK: %[[TP1:.+]] = arith.constant 2 : i64
// CHECK: call @laminaMpiAllGather_bf16(%{{.*}}, %{{.*}}, %[[DIM1]], %[[TP1]])
// CHECK: bufferization.to_tensor %{{.*}} : memref<4x8xbf16> to tensor<4x8xbf16>
// CHECK: %[[DIM0:.+]] = arith.constant 0 : i64
// CHECK: %[[TP2:.+]] = arith.constant 2 : i64
// CHECK: call @laminaMpiReduceScatter_f32(%{{.*}}, %{{.*}}, %[[DIM0]], %[[TP2]])
// CHECK: bufferization.to_tensor %{{.*}} : memref<2x8xf32> to tensor<2x8xf32>
func.func @gather_scatter(%x: tensor<4x4xbf16>, %y: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<2x8xf32>) {
  %0 = shard.all_gather %x on @lamina_grid grid_axes = [0] gather_axis = 1 : tensor<4x4xbf16> -> tensor<4x8xbf16>
  %1 = shard.reduce_scatter %y on @lamina_grid grid_axes = [0] scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  return %0, %1 : tensor<4x8xbf16>, tensor<2x8xf32>
}

// all_slice needs no communication: the process's block, at rank · size.
// CHECK-LABEL: func.func @slice_and_rank
// CHECK: %[[AXIS:.+]] = arith.constant 2 : i64
// CHECK: %[[RANK64:.+]] = call @laminaMpiAxisRank(%[[AXIS]]) : (i64) -> i64
// CHECK: %[[RANK:.+]] = arith.index_cast %[[RANK64]] : i64 to index
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[START:.+]] = arith.muli %[[RANK]], %[[C4]] : index
// CHECK: tensor.extract_slice %{{.*}}[0, %[[START]]] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
// CHECK: call @laminaMpiAxisRank(%{{.*}}) : (i64) -> i64
func.func @slice_and_rank(%x: tensor<4x8xf32>) -> (tensor<4x4xf32>, index) {
  %0 = shard.all_slice %x on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %1 = shard.process_linear_index on @lamina_grid : index
  return %0, %1 : tensor<4x4xf32>, index
}
