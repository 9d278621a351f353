// RUN: lamina-opt %s --lamina-select-cpu-strategy="vector-bits=512 bf16-dots" --convert-lamina-to-linalg --split-input-file | FileCheck %s

// With k_group = 2 (bf16-dots), bf16 operands of an even depth K >= 4 are packed in
// pairs of k as well: W[32, 6] into [2, 3, 16, 2] (Wp[n1, k2, n0, p] =
// W[16·n1 + n0, 2·k2 + p]), x[8, 6] read as [8, 3, 2] (the same memory),
// and the matmul is a generic over (m, n1, n0, k2, p) with two reductions.
// CHECK-DAG: #[[X:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d2, d4)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[XARG:.+]]: tensor<8x6xbf16>, %[[WARG:.+]]: tensor<32x6xbf16>)
// CHECK: %[[WP:.+]] = linalg.pack %[[WARG]] inner_dims_pos = [0, 1] inner_tiles = [16, 2] into %{{.*}} : tensor<32x6xbf16> -> tensor<2x3x16x2xbf16>
// CHECK: %[[XP:.+]] = tensor.expand_shape %[[XARG]] {{\[\[}}0], [1, 2]] output_shape [8, 3, 2] : tensor<8x6xbf16> into tensor<8x3x2xbf16>
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[XP]], %[[WP]] : tensor<8x3x2xbf16>, tensor<2x3x16x2xbf16>) outs(%{{.*}} : tensor<8x2x16xf32>) attrs = {lamina.codegen = #lamina.cpu_matmul<{{.*}}>, lamina.stage = #lamina<stage matmul>}
func.func @layer(%x: tensor<8x6xbf16>, %w: tensor<32x6xbf16>) -> tensor<8x32xbf16> {
  %y = lamina.matmul "fc" %x, %w : (tensor<8x6xbf16>, tensor<32x6xbf16>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// -----

// The backward's dX = dY·W: the weight is the transpose of W[32, 16] and
// is packed from W itself, pairs of its rows (k) interleaved per feature.
// CHECK-LABEL: func.func @transposed_weight
// CHECK-SAME: (%{{.+}}: tensor<8x32xbf16>, %[[WARG:.+]]: tensor<32x16xbf16>)
// CHECK: linalg.pack %[[WARG]] outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [16, 2] into %{{.*}} : tensor<32x16xbf16> -> tensor<1x16x16x2xbf16>
// CHECK-NOT: linalg.transpose
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
func.func @transposed_weight(%dy: tensor<8x32xbf16>, %w: tensor<32x16xbf16>) -> tensor<8x16xf32> {
  %wt_init = tensor.empty() : tensor<16x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x16xbf16>) outs(%wt_init : tensor<16x32xbf16>) permutation = [1, 0]
  %dx = lamina.matmul "fc" %dy, %wt : (tensor<8x32xbf16>, tensor<16x32xbf16>) -> tensor<8x16xf32>
  return %dx : tensor<8x16xf32>
}

// -----

// The backward's dW = dYᵀ·X: dY[4, 16] is packed into panels of 8 rows and
// pairs of k, [2, 2, 8, 2]; the generic runs over (m1, m0, n1, n0, k2, p).
// CHECK-DAG: #[[PANELS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d1, d5)>
// CHECK-DAG: #[[BLOCKS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2, d4, d3, d5)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @row_panels
// CHECK-SAME: (%[[DY:.+]]: tensor<4x16xbf16>, %[[XARG:.+]]: tensor<4x32xbf16>)
// CHECK: %[[P:.+]] = linalg.pack %[[DY]] outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 2] into %{{.*}} : tensor<4x16xbf16> -> tensor<2x2x8x2xbf16>
// CHECK: %[[WP:.+]] = linalg.pack %[[XARG]] outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [16, 2] into %{{.*}} : tensor<4x32xbf16> -> tensor<2x2x16x2xbf16>
// CHECK: linalg.generic {indexing_maps = [#[[PANELS]], #[[BLOCKS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[P]], %[[WP]] : tensor<2x2x8x2xbf16>, tensor<2x2x16x2xbf16>) outs(%{{.*}} : tensor<2x8x2x16xf32>)
func.func @row_panels(%dy: tensor<4x16xbf16>, %x: tensor<4x32xbf16>) -> tensor<16x32xf32> {
  %dyt_init = tensor.empty() : tensor<16x4xbf16>
  %dyt = linalg.transpose ins(%dy : tensor<4x16xbf16>) outs(%dyt_init : tensor<16x4xbf16>) permutation = [1, 0]
  %xt_init = tensor.empty() : tensor<32x4xbf16>
  %xt = linalg.transpose ins(%x : tensor<4x32xbf16>) outs(%xt_init : tensor<32x4xbf16>) permutation = [1, 0]
  %dw = lamina.matmul "fc" %dyt, %xt : (tensor<16x4xbf16>, tensor<32x4xbf16>) -> tensor<16x32xf32>
  return %dw : tensor<16x32xf32>
}

// -----

// Not in pairs: an odd depth, a depth of one pair, f32 operands.
// CHECK-LABEL: func.func @unpaired
// CHECK: linalg.pack %{{.+}} inner_dims_pos = [0] inner_tiles = [16] {{.*}} -> tensor<2x7x16xbf16>
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: linalg.pack %{{.+}} inner_dims_pos = [0] inner_tiles = [16] {{.*}} -> tensor<2x2x16xbf16>
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: linalg.pack %{{.+}} inner_dims_pos = [0] inner_tiles = [16] {{.*}} -> tensor<2x6x16xf32>
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @unpaired(%x7: tensor<8x7xbf16>, %w7: tensor<32x7xbf16>,
                    %x2: tensor<8x2xbf16>, %w2: tensor<32x2xbf16>,
                    %x6: tensor<8x6xf32>, %w6: tensor<32x6xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %a = lamina.matmul "a" %x7, %w7 : (tensor<8x7xbf16>, tensor<32x7xbf16>) -> tensor<8x32xf32>
  %b = lamina.matmul "b" %x2, %w2 : (tensor<8x2xbf16>, tensor<32x2xbf16>) -> tensor<8x32xf32>
  %c = lamina.matmul "c" %x6, %w6 : (tensor<8x6xf32>, tensor<32x6xf32>) -> tensor<8x32xf32>
  return %a, %b, %c : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}
