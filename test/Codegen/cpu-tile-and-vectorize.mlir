// RUN: lamina-opt %s --lamina-select-cpu-strategy --convert-lamina-to-linalg --lamina-hoist-weight-packing --lamina-select-cpu-loop-tiles --lamina-cpu-tile-and-vectorize --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-select-cpu-strategy=vector-bits=512 --convert-lamina-to-linalg --lamina-hoist-weight-packing --lamina-select-cpu-loop-tiles=vector-bits=512 --lamina-cpu-tile-and-vectorize=vector-bits=512 --split-input-file | FileCheck %s --check-prefix=WIDE

// M = 512, K = 1024: cache tiles of 128 rows × 8 blocks (blocks outer; the
// tile's 512 KiB of x rows stay in L2 for 8 blocks of W), register tiles of
// 4 rows × 1 block of 16, K in steps of 4 with the accumulator carried in
// registers; the epilogue runs on the vector accumulator and the output tile
// is written once.
// CHECK-LABEL: func.func @gelu_512
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c128
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c4
// CHECK: %[[ACC:.+]] = scf.for %{{.*}} = %c0 to %c1024 step %c4 iter_args(%{{.*}} = %{{.*}}) -> (vector<4x1x16xf32>)
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<1x4x16xf32> into vector<4x1x16xf32>
// CHECK: scf.yield %{{.*}} : vector<4x1x16xf32>
// CHECK: arith.addf %[[ACC]], %{{.*}} : vector<4x1x16xf32>
// CHECK: math.tanh %{{.*}} : vector<4x1x16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<4x1x16xf32>, tensor<128x8x16xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: return
// With 512-bit vectors (AVX-512), register tiles of 8 rows × 2 blocks (16
// accumulators of 16 lanes), and the function marked so that LLVM keeps the
// vectors whole.
// WIDE-LABEL: func.func @gelu_512
// WIDE-SAME: passthrough = {{\[}}["min-legal-vector-width", "512"]]
// WIDE: scf.for %{{.*}} = %c0 to %c8 step %c2 iter_args
// WIDE-NEXT: scf.for %{{.*}} = %c0 to %c128 step %c8 iter_args
// WIDE-NEXT: scf.for %{{.*}} = %c0 to %c1024 step %c4 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x2x16xf32>)
// WIDE: vector.contract {{.*}} : vector<8x4xf32>, vector<2x4x16xf32> into vector<8x2x16xf32>
// The cache tile keeps the weight panel for 16 register tiles: no prefetch.
// WIDE-NOT: lamina.prefetch_rows
// WIDE-LABEL: func.func @big
func.func @gelu_512(%x: tensor<512x1024xf32>, %w: tensor<4096x1024xf32>, %b: tensor<4096xf32>) -> tensor<512x4096xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<512x1024xf32>, tensor<4096x1024xf32>, tensor<4096xf32>) -> tensor<512x4096xf32>
  return %0 : tensor<512x4096xf32>
}

// -----

// M = 2048: the same cache tiles, blocks outer: each group of 8 blocks of W
// stays while the rows stream past, in two slabs of 1024 rows (4 MiB of x).
// CHECK-LABEL: func.func @big
// CHECK: scf.for %{{.*}} = %c0 to %c2048 step %c1024
// CHECK-NEXT: tensor.extract_slice
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c1024 step %c128
// CHECK: vector.contract
func.func @big(%x: tensor<2048x1024xf32>, %w: tensor<1024x1024xf32>, %b: tensor<1024xf32>) -> tensor<2048x1024xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<2048x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<2048x1024xf32>
  return %0 : tensor<2048x1024xf32>
}

// -----

// K = 4096: 128 rows of x are 2 MiB, too many to keep for 8 blocks; a cache
// tile holds 2 blocks, whose W panel stays while the rows stream past. All
// of x (32 MiB) would not stay in L3 from one pair of blocks to the next:
// the rows run in slabs of 256 (4 MiB), each past every pair of blocks.
// CHECK-LABEL: func.func @deep
// CHECK: scf.for %{{.*}} = %c0 to %c2048 step %c256
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c2
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c256 step %c128
// CHECK: vector.contract
// On two threads each takes half of the blocks (an scf.forall of two
// parts) and runs them as one thread would: slabs, cache tiles of 2 blocks.
// THREADS-LABEL: func.func @deep
// THREADS: scf.forall (%{{.*}}) in (2) shared_outs
// THREADS: tensor.extract_slice %{{.*}} : tensor<2048x64x16xf32> to tensor<2048x32x16xf32>
// THREADS: scf.for %{{.*}} = %c0 to %c2048 step %c256
// THREADS: scf.for %{{.*}} = %c0 to %c32 step %c2
// THREADS: vector.contract
// THREADS: scf.forall.in_parallel
func.func @deep(%x: tensor<2048x4096xf32>, %w: tensor<1024x4096xf32>) -> tensor<2048x1024xf32> {
  %0 = lamina.linear "fc" %x, %w : (tensor<2048x4096xf32>, tensor<1024x4096xf32>) -> tensor<2048x1024xf32>
  return %0 : tensor<2048x1024xf32>
}

// -----

// Decoding (M = 16): no cache tile. Per group of 2 blocks, the fill, then
// the two register tiles of 8 rows share the group's weight panel in chunks
// of 1024 k (16 rows of x and the chunk: 192 KiB), the first streaming it
// from memory in a k loop marked for lamina-cpu-prefetch-rows (4 KiB
// ahead), each tile's accumulator read before and written after its chunk;
// then the epilogue, per register tile's rows.
// WIDE-LABEL: func.func @decode
// WIDE: scf.for %[[GROUP:.+]] = %c0 to %c256 step %c2
// WIDE: scf.for %{{.*}} = %c0 to %c16 step %c8
// WIDE-NEXT: vector.transfer_write %{{.*}} : vector<8x2x16xf32>, tensor<16x2x16xf32>
// WIDE: scf.for %[[CHUNK:.+]] = %c0 to %c4096 step %c1024
// WIDE-NEXT: scf.for %[[ROWS:.+]] = %c0 to %c16 step %c8
// WIDE: %[[ACC:.+]] = vector.transfer_read {{.*}} : tensor<8x2x16xf32>, vector<8x2x16xf32>
// WIDE-NEXT: scf.for %[[K:.+]] = %c0 to %c1024 step %c4 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x2x16xf32>) {
// WIDE-NEXT: %[[AT:.+]] = affine.apply #{{.*}}()[%[[CHUNK]], %[[K]]]
// WIDE-NEXT: vector.transfer_read %{{.*}}[%[[ROWS]], %[[AT]]]
// WIDE-NEXT: vector.transfer_read %{{.*}}[%[[GROUP]], %[[AT]], %c0]
// WIDE-NEXT: vector.contract
// WIDE: } {lamina.prefetch_rows = 4096 : i64}
// WIDE: scf.for %{{.*}} = %c0 to %c16 step %c8
// WIDE: math.tanh %{{.*}} : vector<8x2x16xf32>
// On two threads each streams its half of the weight's blocks, in the
// same nest (here with AVX2's register tiles of 4 rows).
// THREADS-LABEL: func.func @decode
// THREADS: scf.forall (%{{.*}}) in (2) shared_outs
// THREADS: scf.for %{{.*}} = %c0 to %c128 step %c1
// THREADS: scf.for %{{.*}} = %c0 to %c4096 step %c2048
// THREADS: } {lamina.prefetch_rows = 4096 : i64}
// THREADS: math.tanh
// THREADS: scf.forall.in_parallel
func.func @decode(%x: tensor<16x4096xf32>, %w: tensor<4096x4096xf32>, %b: tensor<4096xf32>) -> tensor<16x4096xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<16x4096xf32>, tensor<4096x4096xf32>, tensor<4096xf32>) -> tensor<16x4096xf32>
  return %0 : tensor<16x4096xf32>
}

// -----

// A depth with few factors of 2 (GPT-2's vocabulary, 50304 = 2^7 · 3 · 131,
// the backward's dX of its head): the chunk of k is the largest that
// divides it within the budget (64 rows of x and a block's panel in a
// quarter of L2: 819 k), 524 = 4 · 131, not the 24 that halving from k / 2
// reached.
// CHECK-LABEL: func.func @vocabulary_depth
// CHECK: scf.for %{{.*}} = %c0 to %c50304 step %c524
// WIDE-LABEL: func.func @vocabulary_depth
// WIDE: scf.for %{{.*}} = %c0 to %c50304 step %c524
func.func @vocabulary_depth(%dy: tensor<64x50304xf32>, %w: tensor<768x50304xf32>) -> tensor<64x768xf32> {
  %0 = lamina.linear "head" %dy, %w : (tensor<64x50304xf32>, tensor<768x50304xf32>) -> tensor<64x768xf32>
  return %0 : tensor<64x768xf32>
}

// -----

// Dropout's mask: the Philox generic in rows of 16 groups, then the
// interleaving of its four words, [M, N/4, 4], in tiles of 16 groups × 4
// words (64 bytes), each word read once and broadcast along the last dim.
// CHECK-LABEL: func.func @dropout_mask
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: arith.muli %{{.*}} : vector<1x16xi64>
// CHECK: scf.for %[[ROW:.+]] = %c0 to %c32 step %c1 iter_args(%{{.*}}) -> (tensor<32x32x4xi8>)
// CHECK-NEXT: scf.for %[[GROUP:.+]] = %c0 to %c32 step %c16
// CHECK-COUNT-4: vector.transfer_read %{{.*}}[%[[ROW]], %[[GROUP]]]{{.*}} : tensor<32x32xi8>, vector<1x16xi8>
// CHECK-COUNT-3: arith.select %{{.*}} : vector<1x16x4xi1>, vector<1x16x4xi8>
// CHECK: vector.transfer_write %{{.*}}[%[[ROW]], %[[GROUP]], %c0] {{.*}} : vector<1x16x4xi8>, tensor<32x32x4xi8>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<32x32x4xi8> into tensor<32x128xi8>
func.func @dropout_mask(%x: tensor<32x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>, %s: i64) -> tensor<32x128xf32> {
  %0 = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training> seed %s : (tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>, i64) -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

// An element-wise op whose last dim is 4 takes 64 bytes of its result per
// tile: 4 of the dim before for f32 (16 lanes); 16 for the i8 mask above.
// CHECK-LABEL: func.func @narrow_rows
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<1x4x4xf32>
#narrow = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @narrow_rows(%a: tensor<8x16x4xf32>, %b: tensor<8x16x4xf32>) -> tensor<8x16x4xf32> {
  %init = tensor.empty() : tensor<8x16x4xf32>
  %0 = linalg.generic {indexing_maps = [#narrow, #narrow, #narrow], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %b : tensor<8x16x4xf32>, tensor<8x16x4xf32>) outs(%init : tensor<8x16x4xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x16x4xf32>
  return %0 : tensor<8x16x4xf32>
}

// -----

// Odd shapes: M = 5 gives one-row register tiles; K = 17 is not tiled
// (the whole reduction is one vector contraction); a matmul without an
// epilogue is scheduled on its own.
// CHECK-LABEL: func.func @odd
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c5 step %c1
// CHECK: vector.contract {{.*}} : vector<1x17xf32>, vector<1x17x16xf32> into vector<1x1x16xf32>
func.func @odd(%x: tensor<5x17xf32>, %w: tensor<32x17xf32>) -> tensor<5x32xf32> {
  %0 = lamina.linear "fc" %x, %w : (tensor<5x17xf32>, tensor<32x17xf32>) -> tensor<5x32xf32>
  return %0 : tensor<5x32xf32>
}

// -----

// A large odd K has no clean K tile: the op is left to the loop lowering.
// CHECK-LABEL: func.func @large_odd_k
// CHECK-NOT: vector.contract
// CHECK: linalg.generic
func.func @large_odd_k(%x: tensor<8x4099xf32>, %w: tensor<32x4099xf32>) -> tensor<8x32xf32> {
  %0 = lamina.linear "fc" %x, %w : (tensor<8x4099xf32>, tensor<32x4099xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// RUN: lamina-opt %s --lamina-select-cpu-strategy=threads=2 --convert-lamina-to-linalg --lamina-hoist-weight-packing --lamina-select-cpu-loop-tiles --lamina-cpu-tile-and-vectorize --split-input-file | FileCheck %s --check-prefix=THREADS

// With threads, the blocks are shared out: an scf.forall of one part per
// thread holding the fill, the matmul's tile loops (cache tiles of 8 blocks,
// as on one thread) and the epilogue.
// THREADS-LABEL: func.func @threaded
// THREADS: scf.forall (%{{.*}}) in (2) shared_outs
// THREADS: scf.for %{{.*}} = %c0 to %c128 step %c8
// THREADS: vector.contract
// THREADS: math.tanh %{{.*}} : vector<4x1x16xf32>
// THREADS: scf.forall.in_parallel
// THREADS-NOT: linalg.generic
func.func @threaded(%x: tensor<512x1024xf32>, %w: tensor<4096x1024xf32>, %b: tensor<4096xf32>) -> tensor<512x4096xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<512x1024xf32>, tensor<4096x1024xf32>, tensor<4096xf32>) -> tensor<512x4096xf32>
  return %0 : tensor<512x4096xf32>
}

// -----

// A transpose (the backward's Wᵀ) is tiled 8×8 (AVX2's transpose, see
// lamina-cpu-lower-vectors) and vectorized on its own, before the matmul that
// consumes it is fused: no vector spans the whole transposed panel.
// CHECK-LABEL: func.func @transpose_feeding_a_matmul
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true, true], permutation_map = #{{.*}}} : tensor<512x64xf32>, vector<8x8xf32>
// CHECK-NOT: vector<16x512xf32>
// CHECK-NOT: vector<512x16xf32>
func.func @transpose_feeding_a_matmul(%w: tensor<512x64xf32>) -> tensor<64x512xf32> {
  %e = tensor.empty() : tensor<64x512xf32>
  %t = linalg.transpose ins(%w : tensor<512x64xf32>) outs(%e : tensor<64x512xf32>) permutation = [1, 0]
  return %t : tensor<64x512xf32>
}

// -----

// A transpose moving whole rows of 16 ([1024, 256, 16] → [256, 1024, 16]:
// the backward's packing of Wᵀ, read transposed from W) copies 8 rows × 16
// per tile in the source's order: rows of the source (step 8) outside, the
// 256 blocks of 16 inside; 8 × 64 contiguous bytes written per tile.
// CHECK-LABEL: func.func @row_transpose
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c8
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c256 step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1024x256x16xf32>, vector<1x8x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x8x16xf32>, tensor<256x1024x16xf32>
func.func @row_transpose(%w: tensor<1024x256x16xf32>) -> tensor<256x1024x16xf32> {
  %e = tensor.empty() : tensor<256x1024x16xf32>
  %t = linalg.transpose ins(%w : tensor<1024x256x16xf32>) outs(%e : tensor<256x1024x16xf32>) permutation = [1, 0, 2]
  return %t : tensor<256x1024x16xf32>
}

// -----

// Attention's scores, a batch matmul between layers (per head: q [128, 64]
// times kᵀ [64, 128]): per batch, register tiles of 4 rows × 16 columns, K
// in steps of 4 with the accumulator in registers, the tile written once.
// CHECK-LABEL: func.func @scores
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c4
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c16
// CHECK: %[[ACC:.+]] = scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x4x16xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<32x128x64xf32>, vector<1x4x4xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<32x64x128xf32>, vector<1x4x16xf32>
// CHECK: vector.contract {{.*}} : vector<1x4x4xf32>, vector<1x4x16xf32> into vector<1x4x16xf32>
// CHECK: vector.transfer_write %[[ACC]], {{.*}} : vector<1x4x16xf32>, tensor<1x4x16xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: return
func.func @scores(%q: tensor<32x128x64xf32>, %kt: tensor<32x64x128xf32>) -> tensor<32x128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x128x128xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<32x128x128xf32>) -> tensor<32x128x128xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<32x128x64xf32>, tensor<32x64x128xf32>) outs(%acc : tensor<32x128x128xf32>) -> tensor<32x128x128xf32>
  return %s : tensor<32x128x128xf32>
}

// -----

// N = 24 is not a multiple of 16: the batch matmul stays a loop nest.
// CHECK-LABEL: func.func @untiled_scores
// CHECK-NOT: vector.contract
// CHECK: linalg.batch_matmul
func.func @untiled_scores(%q: tensor<2x8x8xf32>, %kt: tensor<2x8x24xf32>) -> tensor<2x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x8xf32>, tensor<2x8x24xf32>) outs(%acc : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  return %s : tensor<2x8x24xf32>
}

// -----

// A row reduction of floats (a loss's Σ exp(x − max)): each row tiled off,
// its 512 columns reduced in 16 lanes carried in registers across the row
// (no transfer inside the lane loop writes the accumulator back), the lanes
// combined once at the row's end.
// CHECK-LABEL: func.func @row_sum_exp
// THREADS-LABEL: func.func @row_sum_exp
// CHECK: scf.for
// CHECK: %[[LANES:.+]] = scf.for %{{.+}} = %c0 to %c512 step %c16 iter_args(%[[ACC:.+]] = %{{.+}}) -> (vector<1x16xf32>)
// CHECK: math.exp %{{.+}} : vector<1x16xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC]], %{{.+}} : vector<1x16xf32>
// CHECK-NEXT: scf.yield %[[SUM]] : vector<1x16xf32>
// CHECK: vector.multi_reduction <add>, %{{.+}}, %{{.+}} [1] : vector<1x16xf32> to vector<1xf32>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum_exp(%x: tensor<8x512xf32>, %m: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<8x512xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %p = math.exp %d : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// Column sums (a bias's gradient: dY [8, 64, 96] summed over its rows):
// chunks of 32 columns outermost, each chunk's sums carried in registers
// through both row loops (read once before them, written once after), one
// vector add per row. A sum over other dims, or of integers, stays a loop.
// CHECK-LABEL: func.func @column_sums
// CHECK: scf.for %[[C:.+]] = %c0 to %c96 step %c32 iter_args(%[[OUT:.+]] = %{{.+}}) -> (tensor<96xf32>)
// CHECK: %[[INIT:.+]] = vector.transfer_read %[[OUT]][%[[C]]]{{.*}} : tensor<96xf32>, vector<32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args(%{{.+}} = %[[INIT]]) -> (vector<32xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%[[ACC:.+]] = %{{.+}}) -> (vector<32xf32>)
// CHECK: %[[ROW:.+]] = vector.transfer_read %arg0{{.*}} : tensor<8x64x96xf32>, vector<1x1x32xf32>
// CHECK: %[[FLAT:.+]] = vector.shape_cast %[[ROW]] : vector<1x1x32xf32> to vector<32xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC]], %[[FLAT]] : vector<32xf32>
// CHECK-NEXT: scf.yield %[[SUM]] : vector<32xf32>
// CHECK: vector.transfer_write %{{.+}}, %[[OUT]][%[[C]]]
// CHECK: linalg.reduce ins(%arg0 : tensor<8x64x96xf32>) {{.*}} dimensions = [1]
// CHECK: linalg.reduce ins(%arg1 : tensor<64x96xi64>) {{.*}} dimensions = [0]
func.func @column_sums(%dy: tensor<8x64x96xf32>, %codes: tensor<64x96xi64>) -> (tensor<96xf32>, tensor<8x96xf32>, tensor<96xi64>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<96xf32>) -> tensor<96xf32>
  %sums = linalg.reduce ins(%dy : tensor<8x64x96xf32>) outs(%init : tensor<96xf32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e2 = tensor.empty() : tensor<8x96xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x96xf32>) -> tensor<8x96xf32>
  %partial = linalg.reduce ins(%dy : tensor<8x64x96xf32>) outs(%init2 : tensor<8x96xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %izero = arith.constant 0 : i64
  %e3 = tensor.empty() : tensor<96xi64>
  %init3 = linalg.fill ins(%izero : i64) outs(%e3 : tensor<96xi64>) -> tensor<96xi64>
  %isums = linalg.reduce ins(%codes : tensor<64x96xi64>) outs(%init3 : tensor<96xi64>) dimensions = [0]
    (%in: i64, %acc: i64) {
      %r = arith.addi %in, %acc : i64
      linalg.yield %r : i64
    }
  return %sums, %partial, %isums : tensor<96xf32>, tensor<8x96xf32>, tensor<96xi64>
}

// -----

// Column sums over summed dims of one (a bias's gradient for a batch of one
// token, or of sequences of one): those dims get no loop (a loop of one
// iteration folds away, here the one chunk of 64 columns too), the rows of
// more than one do.
// CHECK-LABEL: func.func @column_sums_of_unit_dims
// CHECK-NOT: scf.for
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<1x64xf32>, vector<1x64xf32>
// CHECK-NOT: scf.for
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}}) -> (vector<64xf32>)
// CHECK-NEXT: vector.transfer_read %arg1{{.*}} : tensor<4x1x64xf32>, vector<1x1x64xf32>
// CHECK-NOT: scf.for
// CHECK: return
func.func @column_sums_of_unit_dims(%one: tensor<1x64xf32>, %dy: tensor<4x1x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %sums = linalg.reduce ins(%one : tensor<1x64xf32>) outs(%init : tensor<64xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %sums2 = linalg.reduce ins(%dy : tensor<4x1x64xf32>) outs(%init : tensor<64xf32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return %sums, %sums2 : tensor<64xf32>, tensor<64xf32>
}

// -----

// A norm's weight and bias gradients: one generic, two column sums, the
// rows' statistics broadcast along the columns. Both sums of a chunk stay
// in registers through the row loops.
// CHECK-LABEL: func.func @norm_parameter_gradients
// CHECK: scf.for %[[C:.+]] = %c0 to %c96 step %c32 iter_args(%[[DW:.+]] = %{{.+}}, %[[DB:.+]] = %{{.+}}) -> (tensor<96xf32>, tensor<96xf32>)
// CHECK-DAG: vector.transfer_read %[[DW]][%[[C]]]{{.*}} : tensor<96xf32>, vector<32xf32>
// CHECK-DAG: vector.transfer_read %[[DB]][%[[C]]]{{.*}} : tensor<96xf32>, vector<32xf32>
// CHECK: scf.for {{.*}} -> (vector<32xf32>, vector<32xf32>)
// CHECK: scf.for {{.*}} -> (vector<32xf32>, vector<32xf32>)
// CHECK: arith.subf {{.*}} : vector<1x1x32xf32>
// CHECK: arith.addf {{.*}} : vector<32xf32>
// CHECK: arith.addf {{.*}} : vector<32xf32>
// CHECK: scf.yield {{.*}} : vector<32xf32>, vector<32xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#stat3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @norm_parameter_gradients(%x: tensor<8x64x96xf32>, %dy: tensor<8x64x96xf32>, %mean: tensor<8x64xf32>, %rstd: tensor<8x64xf32>) -> (tensor<96xf32>, tensor<96xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<96xf32>) -> tensor<96xf32>
  %r:2 = linalg.generic {indexing_maps = [#x3, #x3, #stat3, #stat3, #col3, #col3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x, %dy, %mean, %rstd : tensor<8x64x96xf32>, tensor<8x64x96xf32>, tensor<8x64xf32>, tensor<8x64xf32>) outs(%init, %init : tensor<96xf32>, tensor<96xf32>) {
  ^bb0(%a: f32, %g: f32, %m: f32, %s: f32, %dw: f32, %db: f32):
    %c = arith.subf %a, %m : f32
    %n = arith.mulf %c, %s : f32
    %p = arith.mulf %n, %g : f32
    %w = arith.addf %dw, %p : f32
    %b = arith.addf %db, %g : f32
    linalg.yield %w, %b : f32, f32
  } -> (tensor<96xf32>, tensor<96xf32>)
  return %r#0, %r#1 : tensor<96xf32>, tensor<96xf32>
}

// -----

// A transpose that keeps the last dim (attention's heads moved between
// [batch, heads, tokens, d] and [batch, tokens, heads, d]) copies rows of 16
// contiguous elements; one that moves the last dim into an output dim of 4
// takes 8 × 4 tiles (a dim shorter than 8 whole).
// CHECK-LABEL: func.func @head_transposes
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c16
// CHECK: %[[ROW:.+]] = vector.transfer_read {{.*}} : tensor<2x4x8x32xf32>, vector<1x1x1x16xf32>
// CHECK: vector.transfer_write %[[ROW]], {{.*}} : vector<1x1x1x16xf32>, tensor<2x8x4x32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c8
// CHECK: %[[TILE:.+]] = vector.transfer_read {{.*}} : tensor<2x4x8x32xf32>, vector<1x1x8x4xf32>
// CHECK: vector.transfer_write %[[TILE]], {{.*}} : vector<1x1x8x4xf32>, tensor<2x8x32x4xf32>
// CHECK-NOT: linalg.transpose
func.func @head_transposes(%x: tensor<2x4x8x32xf32>) -> (tensor<2x8x4x32xf32>, tensor<2x8x32x4xf32>) {
  %e = tensor.empty() : tensor<2x8x4x32xf32>
  %t = linalg.transpose ins(%x : tensor<2x4x8x32xf32>) outs(%e : tensor<2x8x4x32xf32>) permutation = [0, 2, 1, 3]
  %e2 = tensor.empty() : tensor<2x8x32x4xf32>
  %k = linalg.transpose ins(%x : tensor<2x4x8x32xf32>) outs(%e2 : tensor<2x8x32x4xf32>) permutation = [0, 2, 3, 1]
  return %t, %k : tensor<2x8x4x32xf32>, tensor<2x8x32x4xf32>
}

// -----

// Integer reductions (LNS codes, whose sums are not associative) and
// bodies reading linalg.index (which upstream's partial-reduction tiling
// leaves relative to the tile) keep their loops and their order.
// CHECK-LABEL: func.func @ordered_reductions
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @ordered_reductions(%c: tensor<8x512xi64>, %x: tensor<8x512xf32>) -> (tensor<8xi64>, tensor<8xf32>) {
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<8xi64>
  %init = linalg.fill ins(%zero : i64) outs(%e : tensor<8xi64>) -> tensor<8xi64>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<8x512xi64>) outs(%init : tensor<8xi64>) {
  ^bb0(%a: i64, %acc: i64):
    %r = arith.addi %acc, %a : i64
    linalg.yield %r : i64
  } -> tensor<8xi64>
  %fzero = arith.constant 0.0 : f32
  %fe = tensor.empty() : tensor<8xf32>
  %finit = linalg.fill ins(%fzero : f32) outs(%fe : tensor<8xf32>) -> tensor<8xf32>
  %w = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x512xf32>) outs(%finit : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 1 : index
    %i64 = arith.index_cast %i : index to i64
    %f = arith.sitofp %i64 : i64 to f32
    %p = arith.mulf %a, %f : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s, %w : tensor<8xi64>, tensor<8xf32>
}

// -----

// RUN: lamina-opt %s --lamina-select-cpu-strategy=vector-bits=512 --convert-lamina-to-linalg --lamina-hoist-weight-packing --lamina-select-cpu-loop-tiles=vector-bits=512 --lamina-cpu-tile-and-vectorize=vector-bits=512 --split-input-file | FileCheck %s --check-prefix=PANEL
// RUN: lamina-opt %s --lamina-select-cpu-strategy --convert-lamina-to-linalg --lamina-hoist-weight-packing --lamina-select-cpu-loop-tiles --lamina-cpu-tile-and-vectorize --split-input-file | FileCheck %s --check-prefix=PANEL4

// The backward's dW = dyᵀ·x with dy packed in panels of the register
// tile's rows ([M/P, K, P], hoisted with x's packing): cache tiles of 16
// panels (128 rows) × 2 blocks, blocks outer; one panel per register tile,
// whose contraction reads the panel's P rows of 4 k as one [4, P] run.
// PANEL-LABEL: func.func @weight_gradient
// PANEL-SAME: %{{.*}}: tensor<64x64x8xf32>, %{{.*}}: tensor<4x64x16xf32>
// PANEL: scf.for %{{.*}} = %c0 to %c4 step %c2
// PANEL-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c16
// PANEL: scf.for %{{.*}} = %c0 to %c16 step %c1
// PANEL: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x8x2x16xf32>)
// PANEL-NEXT: affine.apply
// PANEL-NEXT: vector.transfer_read {{.*}} : tensor<64x64x8xf32>, vector<1x4x8xf32>
// PANEL: vector.contract {{.*}} : vector<1x4x8xf32>, vector<2x4x16xf32> into vector<1x8x2x16xf32>
// PANEL-LABEL: func.func @weight_gradient_pack_weights
// PANEL: linalg.pack %{{.*}} outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [8] into %{{.*}} : tensor<64x512xf32> -> tensor<64x64x8xf32>
// With 256-bit vectors, panels of 4 rows for register tiles of 4 × 16.
// PANEL4-LABEL: func.func @weight_gradient
// PANEL4: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x4x1x16xf32>)
// PANEL4: vector.contract {{.*}} : vector<1x4x4xf32>, vector<1x4x16xf32> into vector<1x4x1x16xf32>
func.func @weight_gradient(%dy: tensor<64x512xf32>, %x: tensor<64x64xf32>) -> tensor<512x64xf32> {
  %dyt_init = tensor.empty() : tensor<512x64xf32>
  %dyt = linalg.transpose ins(%dy : tensor<64x512xf32>) outs(%dyt_init : tensor<512x64xf32>) permutation = [1, 0]
  %xt_init = tensor.empty() : tensor<64x64xf32>
  %xt = linalg.transpose ins(%x : tensor<64x64xf32>) outs(%xt_init : tensor<64x64xf32>) permutation = [1, 0]
  %dw = lamina.matmul "fc" %dyt, %xt : (tensor<512x64xf32>, tensor<64x64xf32>) -> tensor<512x64xf32>
  return %dw : tensor<512x64xf32>
}

// -----

// A single panel (M = P) is the register tile's rows: no row loop.
// PANEL-LABEL: func.func @one_panel
// PANEL: scf.for %{{.*}} = %c0 to %c4 step %c2
// PANEL-NOT: scf.for
// PANEL: scf.for %{{.*}} = %c0 to %c24 step %c4
// PANEL: vector.contract {{.*}} : vector<1x4x8xf32>, vector<2x4x16xf32> into vector<1x8x2x16xf32>
func.func @one_panel(%dy: tensor<24x8xf32>, %x: tensor<24x64xf32>) -> tensor<8x64xf32> {
  %dyt_init = tensor.empty() : tensor<8x24xf32>
  %dyt = linalg.transpose ins(%dy : tensor<24x8xf32>) outs(%dyt_init : tensor<8x24xf32>) permutation = [1, 0]
  %xt_init = tensor.empty() : tensor<64x24xf32>
  %xt = linalg.transpose ins(%x : tensor<24x64xf32>) outs(%xt_init : tensor<64x24xf32>) permutation = [1, 0]
  %dw = lamina.matmul "fc" %dyt, %xt : (tensor<8x24xf32>, tensor<64x24xf32>) -> tensor<8x64xf32>
  return %dw : tensor<8x64xf32>
}
