// RUN: lamina-opt %s --lamina-record-result-layouts --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-host-prepare --split-input-file | FileCheck %s

// Sequence parallel: fc2's reduce_scatter leaves each rank a block of the
// tokens (S(1)); the replicated second result gets no attribute.
// CHECK-LABEL: func.func @sequence_parallel
// CHECK-SAME: -> (tensor<2x8x4xf32> {lamina.layout = #lamina.layout<S(1)>}, tensor<2x8x4xf32>)
module attributes {lamina.world_size = 2 : i64} {
  func.func @sequence_parallel(
      %x: tensor<2x8x4xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w1: tensor<16x4xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %r: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
    %g = lamina.sync %x <fwd_pre, all_gather, axis = 1> : tensor<2x8x4xf32>
    %h = lamina.matmul %g, %w1 : (tensor<2x8x4xf32>, tensor<16x4xf32>) -> tensor<2x8x16xf32>
    %p = lamina.matmul %h, %w2 : (tensor<2x8x16xf32>, tensor<4x16xf32>) -> tensor<2x8x4xf32>
    %y = lamina.sync %p <fwd_post, reduce_scatter, axis = 1> : tensor<2x8x4xf32>
    return %y, %r : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  }
}

// -----

// One rank holds everything whole: nothing to record.
// CHECK-LABEL: func.func @one_rank
// CHECK-SAME: -> tensor<4x8xf32> {
// CHECK-NOT: lamina.layout
module attributes {lamina.world_size = 1 : i64} {
  func.func @one_rank(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %y = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
