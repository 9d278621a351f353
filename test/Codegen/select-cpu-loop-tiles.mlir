// RUN: lamina-opt %s --lamina-select-cpu-loop-tiles | FileCheck %s
// RUN: lamina-opt %s --lamina-select-cpu-loop-tiles=vector-bits=512 | FileCheck %s --check-prefix=WIDE

// The schedule and tiles of each op between layers, from its static shape:
// an element-wise op in rows of 16 lanes, its last tile of 40 partial
// (masked at 16); a row sum in rows, each split into 16 lanes; a column
// sum; a transpose moving whole rows of 16; a 2-D transpose in 8 × 8
// tiles; attention's batch matmul in register tiles of 4 × 16 (8 × 32
// with 512-bit vectors), K in steps of 4. An integer reduction (LNS codes
// do not reassociate), a dynamic shape, a fill and a packed layer matmul
// (it follows its #lamina.cpu_matmul) get none.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @between
// CHECK: linalg.generic {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<elementwise tiles = [1, 16] vector_sizes = [1, 16]>
// CHECK: linalg.fill
// CHECK-NOT: lamina.codegen
// CHECK: linalg.generic {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<row_reduction tiles = [1, 16]>
// CHECK: linalg.reduce {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<column_sum tiles = [1, 32]>
// CHECK: linalg.transpose {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<row_transpose>
// CHECK: linalg.transpose {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<elementwise tiles = [8, 8]>
// CHECK: linalg.batch_matmul {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<matmul tiles = [1, 4, 16, 4]>
// CHECK: linalg.generic
// CHECK-NOT: lamina.codegen
// CHECK: arith.addi
// CHECK: linalg.generic
// CHECK-NOT: lamina.codegen
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f32>, lamina.stage = #lamina<stage matmul>}
// CHECK-NOT: lamina.codegen
// CHECK: return
// WIDE-LABEL: func.func @between
// WIDE: linalg.batch_matmul {{.*}}lamina.codegen = #lamina.cpu_loop_tiles<matmul tiles = [1, 8, 32, 4]>
func.func @between(%a: tensor<8x40xf32>, %r: tensor<8x64xf32>, %c: tensor<64x32xf32>, %t: tensor<16x2x16xf32>, %m: tensor<16x32xf32>, %q: tensor<2x16x64xf32>, %k: tensor<2x64x32xf32>, %i: tensor<8x64xi64>, %d: tensor<?x40xf32>, %x: tensor<4x8xf32>, %w: tensor<2x8x16xf32>) -> (tensor<8x40xf32>, tensor<8xf32>, tensor<32xf32>, tensor<2x16x16xf32>, tensor<32x16xf32>, tensor<2x16x32xf32>, tensor<8xi64>, tensor<?x40xf32>, tensor<4x2x16xf32>) {
  %e0 = tensor.empty() : tensor<8x40xf32>
  %add = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x40xf32>) outs(%e0 : tensor<8x40xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<8x40xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %rows = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%r : tensor<8x64xf32>) outs(%f1 : tensor<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<32xf32>
  %cols = linalg.reduce ins(%c : tensor<64x32xf32>) outs(%e2 : tensor<32xf32>) dimensions = [0]
    (%v: f32, %acc: f32) {
      %s = arith.addf %acc, %v : f32
      linalg.yield %s : f32
    }
  %e3 = tensor.empty() : tensor<2x16x16xf32>
  %moved = linalg.transpose ins(%t : tensor<16x2x16xf32>) outs(%e3 : tensor<2x16x16xf32>) permutation = [1, 0, 2]
  %e4 = tensor.empty() : tensor<32x16xf32>
  %tr = linalg.transpose ins(%m : tensor<16x32xf32>) outs(%e4 : tensor<32x16xf32>) permutation = [1, 0]
  %e5 = tensor.empty() : tensor<2x16x32xf32>
  %bmm = linalg.batch_matmul ins(%q, %k : tensor<2x16x64xf32>, tensor<2x64x32xf32>) outs(%e5 : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %zi = arith.constant 0 : i64
  %e6 = tensor.empty() : tensor<8xi64>
  %isum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%i : tensor<8x64xi64>) outs(%e6 : tensor<8xi64>) {
  ^bb0(%v: i64, %acc: i64):
    %s = arith.addi %acc, %v : i64
    linalg.yield %s : i64
  } -> tensor<8xi64>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %d, %c0 : tensor<?x40xf32>
  %e7 = tensor.empty(%n) : tensor<?x40xf32>
  %dyn = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<?x40xf32>) outs(%e7 : tensor<?x40xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<?x40xf32>
  %e8 = tensor.empty() : tensor<4x2x16xf32>
  %packed = linalg.generic {indexing_maps = [affine_map<(m, n1, n0, k) -> (m, k)>, affine_map<(m, n1, n0, k) -> (n1, k, n0)>, affine_map<(m, n1, n0, k) -> (m, n1, n0)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x8xf32>, tensor<2x8x16xf32>) outs(%e8 : tensor<4x2x16xf32>) attrs = {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f32>, lamina.stage = #lamina<stage matmul>} {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x2x16xf32>
  return %add, %rows, %cols, %moved, %tr, %bmm, %isum, %dyn, %packed : tensor<8x40xf32>, tensor<8xf32>, tensor<32xf32>, tensor<2x16x16xf32>, tensor<32x16xf32>, tensor<2x16x32xf32>, tensor<8xi64>, tensor<?x40xf32>, tensor<4x2x16xf32>
}
