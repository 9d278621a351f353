// RUN: lamina-opt %s --lamina-hoist-weight-packing | FileCheck %s --check-prefix=CAST
// An autocast weight: the argument's element-wise truncation to bf16 and
// its packing both move into the packer (once per change of the f32
// master weight); a cast the function still reads elsewhere stays too.
// CAST-LABEL: func.func @autocast
// CAST-SAME: (%{{.+}}: tensor<32x8xf32>, %[[V:.+]]: tensor<32x8xf32>, %[[P:.+]]: tensor<2x4x16x2xbf16>, %{{.+}}: tensor<2x4x16x2xbf16>)
// CAST-NOT: linalg.pack
// CAST: %[[KEPT:.+]] = linalg.generic {{.*}} ins(%[[V]] : tensor<32x8xf32>)
// CAST: return %[[P]], %[[KEPT]]
// CAST-LABEL: func.func @autocast_pack_weights
// CAST: %[[E:.+]] = tensor.empty() : tensor<32x8xbf16>
// CAST: %[[B:.+]] = linalg.generic {{.*}} outs(%[[E]] : tensor<32x8xbf16>)
// CAST: arith.truncf
// CAST: linalg.pack %[[B]] inner_dims_pos = [0, 1] inner_tiles = [16, 2]
// CAST: linalg.generic
// CAST: linalg.pack
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @autocast(%w: tensor<32x8xf32>, %v: tensor<32x8xf32>) -> (tensor<2x4x16x2xbf16>, tensor<32x8xbf16>) {
  %e = tensor.empty() : tensor<32x8xbf16>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<32x8xf32>) outs(%e : tensor<32x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<32x8xbf16>
  %pe = tensor.empty() : tensor<2x4x16x2xbf16>
  %p = linalg.pack %b inner_dims_pos = [0, 1] inner_tiles = [16, 2] into %pe : tensor<32x8xbf16> -> tensor<2x4x16x2xbf16>
  %e2 = tensor.empty() : tensor<32x8xbf16>
  %kept = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<32x8xf32>) outs(%e2 : tensor<32x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<32x8xbf16>
  %pe2 = tensor.empty() : tensor<2x4x16x2xbf16>
  %p2 = linalg.pack %kept inner_dims_pos = [0, 1] inner_tiles = [16, 2] into %pe2 : tensor<32x8xbf16> -> tensor<2x4x16x2xbf16>
  %use = arith.addf %p2, %p2 : tensor<2x4x16x2xbf16>
  return %p, %kept : tensor<2x4x16x2xbf16>, tensor<32x8xbf16>
}
