// RUN: lamina-opt %s --lamina-partition | FileCheck %s

// Attention sharded by heads on 2 ranks, as the importer writes it for a
// contiguous [Q; K; V] projection: each rank holds 2 of the 4 heads, i.e.
// 16 of each 32 columns of Q, K and V (48 of 96), which the split takes
// group by group; the heads' sharding moves through view, transpose, the
// batch matmul over [B · heads] (B = 1: 2 of 4 batches), scaling (the splat
// rebuilt at the rank's shape), the causal mask (broadcast along heads) and
// softmax, then the merge feeds the row-parallel projection and its
// all-reduce.
// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[QKV:[a-z0-9]+]]: tensor<1x8x48xf32> {lamina.layout = #lamina.layout<S(2, groups = 3)>}, %[[WO:[a-z0-9]+]]: tensor<32x16xf32>
// CHECK: %[[Q:.+]] = tensor.extract_slice %[[QKV]][0, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<1x8x48xf32> to tensor<1x8x16xf32>
// CHECK: %[[K:.+]] = tensor.extract_slice %[[QKV]][0, 0, 16] [1, 8, 16] [1, 1, 1] : tensor<1x8x48xf32> to tensor<1x8x16xf32>
// CHECK: %[[QH:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [1, 8, 2, 8] : tensor<1x8x16xf32> into tensor<1x8x2x8xf32>
// CHECK: %[[KH:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [1, 8, 2, 8]
// CHECK: %[[QT:.+]] = linalg.transpose ins(%[[QH]] : tensor<1x8x2x8xf32>) outs(%{{.+}} : tensor<1x2x8x8xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[KH]] : tensor<1x8x2x8xf32>) outs(%{{.+}} : tensor<1x2x8x8xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[QB:.+]] = tensor.collapse_shape %[[QT]] {{\[}}[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
// CHECK: %[[KB:.+]] = tensor.collapse_shape %[[KT]] {{\[}}[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
// CHECK: %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: %[[S:.+]] = linalg.batch_matmul ins(%[[QB]], %[[KB]] : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%[[ACC]] : tensor<2x8x8xf32>)
// CHECK: %[[S4:.+]] = tensor.expand_shape %[[S]] {{\[}}[0, 1], [2], [3]] output_shape [1, 2, 8, 8]
// CHECK: %[[SCALE:.+]] = arith.constant dense<0.353553385> : tensor<1x2x8x8xf32>
// CHECK: %[[SCALED:.+]] = arith.mulf %[[S4]], %[[SCALE]] : tensor<1x2x8x8xf32>
// CHECK: %[[MASKED:.+]] = lamina.masked_fill %[[SCALED]], %{{.+}} value 0xFFF0000000000000 : tensor<1x2x8x8xf32>, tensor<1x1x8x8xi1>
// CHECK: %[[P:.+]] = lamina.softmax %[[MASKED]] dim 3 : tensor<1x2x8x8xf32>
// CHECK: %[[PT:.+]] = linalg.transpose ins(%[[P]] : tensor<1x2x8x8xf32>) outs(%{{.+}} : tensor<1x8x2x8xf32>)
// CHECK: %[[MERGED:.+]] = tensor.collapse_shape %[[PT]] {{\[}}[0], [1], [2, 3]] : tensor<1x8x2x8xf32> into tensor<1x8x16xf32>
// CHECK: %[[O:.+]] = lamina.matmul "attn.c_proj" %[[MERGED]], %[[WO]] : (tensor<1x8x16xf32>, tensor<32x16xf32>) -> tensor<1x8x32xf32>
// CHECK: %[[R:.+]] = shard.all_reduce %[[O]]
// CHECK: return %[[R]] : tensor<1x8x32xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @attention(%qkv: tensor<1x8x96xf32> {lamina.layout = #lamina.layout<S(2, groups = 3)>}, %wo: tensor<32x32xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<1x8x32xf32> {
    %q = tensor.extract_slice %qkv[0, 0, 0] [1, 8, 32] [1, 1, 1] : tensor<1x8x96xf32> to tensor<1x8x32xf32>
    %k = tensor.extract_slice %qkv[0, 0, 32] [1, 8, 32] [1, 1, 1] : tensor<1x8x96xf32> to tensor<1x8x32xf32>
    %qh = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 8, 4, 8] : tensor<1x8x32xf32> into tensor<1x8x4x8xf32>
    %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 8, 4, 8] : tensor<1x8x32xf32> into tensor<1x8x4x8xf32>
    %e1 = tensor.empty() : tensor<1x4x8x8xf32>
    %qt = linalg.transpose ins(%qh : tensor<1x8x4x8xf32>) outs(%e1 : tensor<1x4x8x8xf32>) permutation = [0, 2, 1, 3]
    %e2 = tensor.empty() : tensor<1x4x8x8xf32>
    %kt = linalg.transpose ins(%kh : tensor<1x8x4x8xf32>) outs(%e2 : tensor<1x4x8x8xf32>) permutation = [0, 2, 3, 1]
    %qb = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x4x8x8xf32> into tensor<4x8x8xf32>
    %kb = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x4x8x8xf32> into tensor<4x8x8xf32>
    %zero = arith.constant 0.0 : f32
    %e3 = tensor.empty() : tensor<4x8x8xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %s = linalg.batch_matmul ins(%qb, %kb : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%acc : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [1, 4, 8, 8] : tensor<4x8x8xf32> into tensor<1x4x8x8xf32>
    %scale = arith.constant dense<0.35355339> : tensor<1x4x8x8xf32>
    %scaled = arith.mulf %s4, %scale : tensor<1x4x8x8xf32>
    %mask = arith.constant dense<"0x0103070F1F3F7FFF"> : tensor<1x1x8x8xi1>
    %masked = lamina.masked_fill %scaled, %mask value 0xFFF0000000000000 : tensor<1x4x8x8xf32>, tensor<1x1x8x8xi1>
    %p = lamina.softmax %masked dim 3 : tensor<1x4x8x8xf32>
    %e4 = tensor.empty() : tensor<1x8x4x8xf32>
    %pt = linalg.transpose ins(%p : tensor<1x4x8x8xf32>) outs(%e4 : tensor<1x8x4x8xf32>) permutation = [0, 2, 1, 3]
    %merged = tensor.collapse_shape %pt [[0], [1], [2, 3]] : tensor<1x8x4x8xf32> into tensor<1x8x32xf32>
    %o = lamina.matmul "attn.c_proj" %merged, %wo : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
    %r = lamina.sync %o <fwd_post, all_reduce> : tensor<1x8x32xf32>
    return %r : tensor<1x8x32xf32>
  }
}
