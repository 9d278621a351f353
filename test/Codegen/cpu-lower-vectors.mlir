// RUN: lamina-opt %s --lamina-cpu-lower-vectors --split-input-file | FileCheck %s

// A 4×16 register tile of the packed matmul, one K step of 4: the
// contraction becomes 16 broadcasts and 16-wide FMAs (the remaining n-D
// transfers are unrolled by convert-vector-to-scf in the pipeline).
#mx = affine_map<(m, n1, n0, k) -> (m, k)>
#mw = affine_map<(m, n1, n0, k) -> (n1, k, n0)>
#my = affine_map<(m, n1, n0, k) -> (m, n1, n0)>
// CHECK-LABEL: func.func @tile
func.func @tile(%x: memref<4x4xf32>, %w: memref<1x4x16xf32>, %acc: vector<4x1x16xf32>) -> vector<4x1x16xf32> {
  // CHECK-NOT: vector.contract
  // CHECK-COUNT-16: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
  // CHECK-NOT: vector.fma
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %a = vector.transfer_read %x[%c0, %c0], %z {in_bounds = [true, true]} : memref<4x4xf32>, vector<4x4xf32>
  %b = vector.transfer_read %w[%c0, %c0, %c0], %z {in_bounds = [true, true, true]} : memref<1x4x16xf32>, vector<1x4x16xf32>
  %r = vector.contract {indexing_maps = [#mx, #mw, #my], iterator_types = ["parallel", "parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %acc : vector<4x4xf32>, vector<1x4x16xf32> into vector<4x1x16xf32>
  return %r : vector<4x1x16xf32>
}

// -----

// A column of a tile transposed into a row (the backward's dYᵀ of a
// vocabulary of 3, one row per register tile): the transpose lowers to a
// shape cast, which the pass leaves for the LLVM lowering instead of
// lowering and folding it back without end.
// CHECK-LABEL: func.func @unit_dim_transpose
// CHECK: %[[COLUMN:.+]] = vector.transfer_read %arg0{{.*}} : memref<32x3xf32>, vector<32x1xf32>
// CHECK: %[[ROW:.+]] = vector.shape_cast %[[COLUMN]] : vector<32x1xf32> to vector<1x32xf32>
// CHECK: vector.transfer_write %[[ROW]], %arg1
func.func @unit_dim_transpose(%m: memref<32x3xf32>, %o: memref<1x32xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%c0, %i], %p {in_bounds = [true, true]} : memref<32x3xf32>, vector<32x1xf32>
  %t = vector.transpose %v, [1, 0] : vector<32x1xf32> to vector<1x32xf32>
  vector.transfer_write %t, %o[%c0, %c0] {in_bounds = [true, true]} : vector<1x32xf32>, memref<1x32xf32>
  return
}

// -----

// A transpose of bf16 tiles (a bf16 weight's, packed) moves bits only: it
// is done on i16, so that no bf16 lane is moved through f32 by LLVM's x86
// back end (a compiler-rt call on CPUs without AVX512-BF16).
// CHECK-LABEL: func.func @bf16_transpose
// CHECK: %[[BITS:.+]] = vector.bitcast %arg0 : vector<1x8x8xbf16> to vector<1x8x8xi16>
// CHECK-NOT: bf16
// CHECK: vector.bitcast %{{.+}} : vector<1x8x8xi16> to vector<1x8x8xbf16>
func.func @bf16_transpose(%tile: vector<1x8x8xbf16>) -> vector<1x8x8xbf16> {
  %t = vector.transpose %tile, [0, 2, 1] : vector<1x8x8xbf16> to vector<1x8x8xbf16>
  return %t : vector<1x8x8xbf16>
}
