// RUN: lamina-opt %s --lamina-cpu-bf16-dot-products --split-input-file | FileCheck %s

// A register tile of 2 rows, one block of 16 features and 4 pairs of k:
// one dot product per row and pair, each row's pair of x broadcast as one
// 32-bit lane, W's 16 × 2 bf16 of the pair as they lie, chained through
// the row's accumulator. No contraction is left.
#x = affine_map<(m, n1, n0, k2, p) -> (m, k2, p)>
#w = affine_map<(m, n1, n0, k2, p) -> (n1, k2, n0, p)>
#acc = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0)>
// CHECK-LABEL: func.func @tile
// CHECK-NOT: vector.contract
// CHECK: %[[X:.+]] = vector.extract_strided_slice %{{.+}} {offsets = [0, 0, 0], sizes = [1, 1, 2], strides = [1, 1, 1]} : vector<2x4x2xbf16> to vector<1x1x2xbf16>
// CHECK: %[[W:.+]] = vector.extract_strided_slice %{{.+}} {offsets = [0, 0, 0, 0], sizes = [1, 1, 16, 2], strides = [1, 1, 1, 1]} : vector<1x4x16x2xbf16> to vector<1x1x16x2xbf16>
// CHECK: %[[ACC:.+]] = vector.extract_strided_slice %{{.+}} {offsets = [0, 0, 0], sizes = [1, 1, 16], strides = [1, 1, 1]} : vector<2x1x16xf32> to vector<1x1x16xf32>
// CHECK: %[[PAIR:.+]] = vector.shape_cast %[[X]] : vector<1x1x2xbf16> to vector<2xbf16>
// CHECK: %[[WS:.+]] = vector.shape_cast %[[W]] : vector<1x1x16x2xbf16> to vector<32xbf16>
// CHECK: %[[A:.+]] = vector.shape_cast %[[ACC]] : vector<1x1x16xf32> to vector<16xf32>
// CHECK: %[[LANE:.+]] = vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[I:.+]] = vector.extract %[[LANE]][0] : i32 from vector<1xi32>
// CHECK: %[[LANES:.+]] = vector.broadcast %[[I]] : i32 to vector<16xi32>
// CHECK: %[[XS:.+]] = vector.bitcast %[[LANES]] : vector<16xi32> to vector<32xbf16>
// CHECK: %[[D0:.+]] = x86vector.avx512.dot %[[A]], %[[XS]], %[[WS]] : vector<32xbf16> -> vector<16xf32>
// CHECK: x86vector.avx512.dot %[[D0]],
// CHECK-COUNT-6: x86vector.avx512.dot
// CHECK-NOT: x86vector.avx512.dot
// CHECK-NOT: vector.contract
func.func @tile(%x: vector<2x4x2xbf16>, %w: vector<1x4x16x2xbf16>, %acc: vector<2x1x16xf32>) -> vector<2x1x16xf32> {
  %xe = arith.extf %x : vector<2x4x2xbf16> to vector<2x4x2xf32>
  %we = arith.extf %w : vector<1x4x16x2xbf16> to vector<1x4x16x2xf32>
  %r = vector.contract {indexing_maps = [#x, #w, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %xe, %we, %acc : vector<2x4x2xf32>, vector<1x4x16x2xf32> into vector<2x1x16xf32>
  return %r : vector<2x1x16xf32>
}

// -----

// x broadcast to every feature (a tile of one row whose broadcast the
// contraction did not take into its map): the pair at feature 0.
#x = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0, k2, p)>
#w = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0, k2, p)>
#acc = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0)>
// CHECK-LABEL: func.func @broadcast_row
// CHECK: %[[ROW:.+]] = vector.broadcast %{{.+}} : vector<1x1x2xbf16> to vector<1x1x16x1x2xbf16>
// CHECK: %[[X:.+]] = vector.extract_strided_slice %[[ROW]] {offsets = [0, 0, 0, 0, 0], sizes = [1, 1, 1, 1, 2], strides = [1, 1, 1, 1, 1]}
// CHECK: vector.shape_cast %[[X]] : vector<1x1x1x1x2xbf16> to vector<2xbf16>
// CHECK: x86vector.avx512.dot
// CHECK-NOT: vector.contract
func.func @broadcast_row(%x: vector<1x1x2xbf16>, %w: vector<1x1x16x1x2xbf16>, %acc: vector<1x1x16xf32>) -> vector<1x1x16xf32> {
  %row = vector.broadcast %x : vector<1x1x2xbf16> to vector<1x1x16x1x2xbf16>
  %xe = arith.extf %row : vector<1x1x16x1x2xbf16> to vector<1x1x16x1x2xf32>
  %we = arith.extf %w : vector<1x1x16x1x2xbf16> to vector<1x1x16x1x2xf32>
  %r = vector.contract {indexing_maps = [#x, #w, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %xe, %we, %acc : vector<1x1x16x1x2xf32>, vector<1x1x16x1x2xf32> into vector<1x1x16xf32>
  return %r : vector<1x1x16xf32>
}

// -----

// W's pairs not feature-major, and an x that varies along the features:
// neither is a dot product; both stay contractions on widened operands
// (lamina-cpu-lower-vectors makes FMAs of them).
#x = affine_map<(m, n1, n0, k2, p) -> (m, k2, p)>
#w = affine_map<(m, n1, n0, k2, p) -> (n1, k2, p, n0)>
#x_features = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0, k2, p)>
#w_plain = affine_map<(m, n1, n0, k2, p) -> (n1, k2, n0, p)>
#acc = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0)>
// CHECK-LABEL: func.func @declined
// CHECK-NOT: x86vector
// CHECK: %[[X:.+]] = arith.extf %{{.+}} : vector<1x1x2xbf16> to vector<1x1x2xf32>
// CHECK: %[[W:.+]] = arith.extf %{{.+}} : vector<1x1x2x16xbf16> to vector<1x1x2x16xf32>
// CHECK: vector.contract {{.+}} %[[X]], %[[W]], %{{.+}} : vector<1x1x2xf32>, vector<1x1x2x16xf32> into vector<1x1x16xf32>
// CHECK: arith.extf %{{.+}} : vector<1x1x16x1x2xbf16> to vector<1x1x16x1x2xf32>
// CHECK: vector.contract
// CHECK-NOT: x86vector
func.func @declined(%x: vector<1x1x2xbf16>, %w: vector<1x1x2x16xbf16>, %xf: vector<1x1x16x1x2xbf16>, %w2: vector<1x1x16x2xbf16>, %acc: vector<1x1x16xf32>) -> (vector<1x1x16xf32>, vector<1x1x16xf32>) {
  %xe = arith.extf %x : vector<1x1x2xbf16> to vector<1x1x2xf32>
  %we = arith.extf %w : vector<1x1x2x16xbf16> to vector<1x1x2x16xf32>
  %r = vector.contract {indexing_maps = [#x, #w, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %xe, %we, %acc : vector<1x1x2xf32>, vector<1x1x2x16xf32> into vector<1x1x16xf32>
  %xfe = arith.extf %xf : vector<1x1x16x1x2xbf16> to vector<1x1x16x1x2xf32>
  %w2e = arith.extf %w2 : vector<1x1x16x2xbf16> to vector<1x1x16x2xf32>
  %s = vector.contract {indexing_maps = [#x_features, #w_plain, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %xfe, %w2e, %acc : vector<1x1x16x1x2xf32>, vector<1x1x16x2xf32> into vector<1x1x16xf32>
  return %r, %s : vector<1x1x16xf32>, vector<1x1x16xf32>
}

// -----

// Slices of in-bounds reads of packed operands whose elements lie
// contiguously: each dot product loads its x pair and its 16 pairs of W
// straight from memory (one 64-byte load), not through the tile's vectors.
#x = affine_map<(m, n1, n0, k2, p) -> (m, k2, p)>
#w = affine_map<(m, n1, n0, k2, p) -> (n1, k2, n0, p)>
#acc = affine_map<(m, n1, n0, k2, p) -> (m, n1, n0)>
// CHECK-LABEL: func.func @loads
// CHECK-SAME: (%[[XM:.+]]: memref<8x4x2xbf16>, %[[WM:.+]]: memref<2x4x16x2xbf16>, %[[I:.+]]: index,
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: vector.load %[[XM]][%[[I]], %[[C0]], %[[C0]]] : memref<8x4x2xbf16>, vector<2xbf16>
// CHECK: vector.load %[[WM]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] : memref<2x4x16x2xbf16>, vector<32xbf16>
// CHECK: x86vector.avx512.dot
// CHECK: %[[C1:.+]] = arith.constant 1 : index
// CHECK: vector.load %[[XM]][%[[I]], %[[C1]], %[[C0]]] : memref<8x4x2xbf16>, vector<2xbf16>
// CHECK: vector.load %[[WM]][%[[C0]], %{{.+}}, %[[C0]], %[[C0]]] : memref<2x4x16x2xbf16>, vector<32xbf16>
// CHECK-COUNT-2: x86vector.avx512.dot
func.func @loads(%xm: memref<8x4x2xbf16>, %wm: memref<2x4x16x2xbf16>, %i: index, %acc: vector<1x1x16xf32>) -> vector<1x1x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : bf16
  %x = vector.transfer_read %xm[%i, %c0, %c0], %pad {in_bounds = [true, true, true]} : memref<8x4x2xbf16>, vector<1x3x2xbf16>
  %w = vector.transfer_read %wm[%c0, %c0, %c0, %c0], %pad {in_bounds = [true, true, true, true]} : memref<2x4x16x2xbf16>, vector<1x3x16x2xbf16>
  %xe = arith.extf %x : vector<1x3x2xbf16> to vector<1x3x2xf32>
  %we = arith.extf %w : vector<1x3x16x2xbf16> to vector<1x3x16x2xf32>
  %r = vector.contract {indexing_maps = [#x, #w, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %xe, %we, %acc : vector<1x3x2xf32>, vector<1x3x16x2xf32> into vector<1x1x16xf32>
  return %r : vector<1x1x16xf32>
}
