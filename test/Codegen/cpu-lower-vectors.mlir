// RUN: lamina-opt %s --lamina-cpu-lower-vectors | FileCheck %s

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
