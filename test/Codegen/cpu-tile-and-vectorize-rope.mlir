// RUN: lamina-opt %s --lamina-select-cpu-strategy --convert-lamina-to-linalg --lamina-hoist-weight-packing --lamina-select-cpu-loop-tiles --lamina-cpu-tile-and-vectorize --split-input-file | FileCheck %s

// A projection with the rope epilogue, 256 rows in cache tiles: in each
// register tile of 4 rows × 16 features the matmul is computed once (the
// epilogue and the pair partners both read it, fused once each and merged),
// its accumulator stays in registers across k, the partners (a contraction
// with the exchange matrix) are one shuffle of that accumulator, swapping
// the lanes of each pair, the tables are gathered by index, and the rotated
// tile is written once.
// CHECK-LABEL: func.func @cache_tiles
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[ACC:.+]] = scf.for {{.*}} -> (vector<4x1x16xf32>)
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<1x4x16xf32> into vector<4x1x16xf32>
// CHECK-NOT: vector<1x4x16xf32> into vector<4x1x16xf32>
// CHECK: %[[FLAT:.+]] = vector.shape_cast %[[ACC]] : vector<4x1x16xf32> to vector<64xf32>
// CHECK: vector.shuffle %[[FLAT]], %[[FLAT]] [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 17, 16,
// CHECK: vector.gather
// CHECK: vector.gather
// CHECK: vector.transfer_write {{.*}} : vector<4x1x16xf32>, tensor<128x2x16xf32>
// CHECK-NOT: vector.contract
// CHECK-LABEL: func.func @cache_tiles_pack_weights
func.func @cache_tiles(%x: tensor<2x128x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<1x128x1x16xf32>, %sin: tensor<1x128x1x16xf32>) -> tensor<2x128x128xf32> {
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %sin : (tensor<2x128x128xf32>, tensor<128x128xf32>, tensor<1x128x1x16xf32>, tensor<1x128x1x16xf32>) -> tensor<2x128x128xf32>
  return %0 : tensor<2x128x128xf32>
}

// -----

// 32 rows: the register tiles take turns over chunks of k, and the
// epilogue runs after the last chunk, 4 rows at a time, the pair partners
// fused into its loop.
// CHECK-LABEL: func.func @chunks
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<1x4x16xf32> into vector<4x1x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c4
// CHECK: vector.shuffle {{.*}} : vector<64xf32>, vector<64xf32>
// CHECK: vector.gather
// CHECK: vector.transfer_write {{.*}} : vector<4x1x16xf32>, tensor<32x1x16xf32>
func.func @chunks(%x: tensor<2x16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<1x16x1x16xf32>, %sin: tensor<1x16x1x16xf32>) -> tensor<2x16x128xf32> {
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %sin : (tensor<2x16x128xf32>, tensor<128x128xf32>, tensor<1x16x1x16xf32>, tensor<1x16x1x16xf32>) -> tensor<2x16x128xf32>
  return %0 : tensor<2x16x128xf32>
}
