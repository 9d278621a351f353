// RUN: lamina-opt %s --lamina-select-cpu-loop-tiles --lamina-cpu-tile-and-vectorize --split-input-file | FileCheck %s

// Sizes that are not multiples of the tiles (a vocabulary of 76): every op
// still gets its tiles, the last one partial and vectorized with masks at
// the full tile's size, so that no op is left whole for a layer's matmul to
// pull into its register tiles.

// An element-wise row of 76: tiles of 16, the fifth of 12 lanes.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.for %{{.+}} = %c0 to %c256 step %c1
// CHECK: scf.for %[[J:.+]] = %c0 to %c76 step %c16
// CHECK: %[[N:.+]] = affine.min #{{.+}}(%[[J]])
// CHECK: %[[MASK:.+]] = vector.create_mask %c1, %[[N]] : vector<1x16xi1>
// CHECK: vector.mask %[[MASK]] { vector.transfer_read %arg0{{.*}} : tensor<256x76xf32>, vector<1x16xf32> }
// CHECK: math.exp %{{.+}} : vector<1x16xf32>
// CHECK: vector.mask %[[MASK]] { vector.transfer_write
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @elementwise(%x: tensor<256x76xf32>, %m: tensor<256xf32>) -> tensor<256x76xf32> {
  %e = tensor.empty() : tensor<256x76xf32>
  %r = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<256x76xf32>, tensor<256xf32>) outs(%e : tensor<256x76xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %p = math.exp %d : f32
    linalg.yield %p : f32
  } -> tensor<256x76xf32>
  return %r : tensor<256x76xf32>
}

// -----

// A row maximum over 76: 16 lanes per row, the last lane tile of 12 read
// under a mask (the other lanes keep their maxima), combined once per row.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[LANES:.+]] = scf.for %[[J:.+]] = %c0 to %c76 step %c16 iter_args(%{{.+}}) -> (tensor<1x16xf32>)
// CHECK: %[[N:.+]] = affine.min #{{.+}}(%[[J]])
// CHECK: %[[MASK:.+]] = vector.create_mask %c1, %[[N]] : vector<1x16xi1>
// CHECK: vector.mask %[[MASK]] { vector.transfer_read %arg0{{.*}} : tensor<8x76xf32>, vector<1x16xf32> }
// CHECK: arith.maximumf %{{.+}} : vector<1x16xf32>
// CHECK: vector.multi_reduction <maximumf>, %{{.+}}, %{{.+}} [1] : vector<1x16xf32> to vector<1xf32>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_max(%x: tensor<8x76xf32>) -> tensor<8xf32> {
  %low = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%low : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x76xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Column sums of 76 columns (a bias's gradient): chunks of 16, the last of
// 12 read and written under a mask.
// CHECK-LABEL: func.func @column_sums
// CHECK: scf.for %[[C:.+]] = %c0 to %c76 step %c16
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1
// CHECK: %[[N:.+]] = affine.min #{{.+}}(%[[C]])
// CHECK: vector.mask %{{.+}} { vector.transfer_read %arg0{{.*}} : tensor<32x76xf32>, vector<1x16xf32> }
// CHECK: %[[SUMS:.+]] = vector.create_mask %[[N]] : vector<16xi1>
// CHECK: arith.addf %{{.+}} : vector<16xf32>
// CHECK: vector.mask %[[SUMS]] { vector.transfer_write
func.func @column_sums(%dy: tensor<32x76xf32>) -> tensor<76xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<76xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<76xf32>) -> tensor<76xf32>
  %sums = linalg.reduce ins(%dy : tensor<32x76xf32>) outs(%init : tensor<76xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return %sums : tensor<76xf32>
}

// -----

// dYᵀ of a vocabulary of 76: 8 × 8 tiles, the last row of tiles 4 wide,
// read transposed and written under masks.
// CHECK-LABEL: func.func @transpose
// CHECK: scf.for %[[I:.+]] = %c0 to %c76 step %c8
// CHECK: scf.for %{{.+}} = %c0 to %c256 step %c8
// CHECK: %[[N:.+]] = affine.min #{{.+}}(%[[I]])
// CHECK: %[[READ:.+]] = vector.create_mask %c8, %[[N]] : vector<8x8xi1>
// CHECK: vector.mask %[[READ]] { vector.transfer_read %arg0{{.*}} permutation_map = {{.*}} : tensor<256x76xf32>, vector<8x8xf32> }
// CHECK: %[[WRITE:.+]] = vector.create_mask %[[N]], %c8 : vector<8x8xi1>
// CHECK: vector.mask %[[WRITE]] { vector.transfer_write {{.*}} : vector<8x8xf32>, tensor<?x8xf32> }
func.func @transpose(%dy: tensor<256x76xf32>) -> tensor<76x256xf32> {
  %e = tensor.empty() : tensor<76x256xf32>
  %t = linalg.transpose ins(%dy : tensor<256x76xf32>) outs(%e : tensor<76x256xf32>) permutation = [1, 0]
  return %t : tensor<76x256xf32>
}

// -----

// A transpose that moves only a dim of size 1 (dYᵀ of one output feature)
// is the reshape it is.
// CHECK-LABEL: func.func @unit_transpose
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<256x1xf32> into tensor<256xf32>
// CHECK: %[[R:.+]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1]] output_shape [1, 256] : tensor<256xf32> into tensor<1x256xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[R]]
func.func @unit_transpose(%dy: tensor<256x1xf32>) -> tensor<1x256xf32> {
  %e = tensor.empty() : tensor<1x256xf32>
  %t = linalg.transpose ins(%dy : tensor<256x1xf32>) outs(%e : tensor<1x256xf32>) permutation = [1, 0]
  return %t : tensor<1x256xf32>
}

// -----

// Ops that read at other than a projected permutation of their loops (a
// convolution gradient's turned kernel, its windows) get no schedule:
// upstream's vectorizer takes none of them, so they stay whole, and later
// loop nests.
// CHECK-LABEL: func.func @windowed_reads
// CHECK-NOT: vector.
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-NOT: vector.
// CHECK: return
#turn = affine_map<(f, c, kh, kw) -> (f, c, 2 - kh, 2 - kw)>
#same = affine_map<(f, c, kh, kw) -> (f, c, kh, kw)>
#window = affine_map<(n, c, i, j, f, kh, kw) -> (n, f, i + kh, j + kw)>
#kernel = affine_map<(n, c, i, j, f, kh, kw) -> (f, c, kh, kw)>
#out = affine_map<(n, c, i, j, f, kh, kw) -> (n, c, i, j)>
func.func @windowed_reads(%z: tensor<2x16x34x34xf32>, %w: tensor<16x8x3x3xf32>, %acc: tensor<2x8x32x32xf32>) -> tensor<2x8x32x32xf32> {
  %e = tensor.empty() : tensor<16x8x3x3xf32>
  %turned = linalg.generic {indexing_maps = [#turn, #same], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : tensor<16x8x3x3xf32>) outs(%e : tensor<16x8x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<16x8x3x3xf32>
  %dx = linalg.generic {indexing_maps = [#window, #kernel, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%z, %turned : tensor<2x16x34x34xf32>, tensor<16x8x3x3xf32>) outs(%acc : tensor<2x8x32x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32x32xf32>
  return %dx : tensor<2x8x32x32xf32>
}
