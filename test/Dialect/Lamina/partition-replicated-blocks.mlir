// RUN: lamina-opt %s --lamina-partition --split-input-file | FileCheck %s

// Replicated values joining sharded ones in element-wise ops, concatenations
// and batch matmuls: each rank takes its block of them, without
// communication. A broadcast along the sharded axis used only there is
// built at the block's shape (a rotary table, an additive causal mask);
// anything else is sliced (shard.all_slice), per group for a grouped axis.

// Rotary tables [T, D] broadcast along batch and heads, applied to queries
// sharded by heads (S(2), 4 heads on 2 ranks): the broadcast is built at 2
// heads.
// CHECK-LABEL: func.func @rotary_table(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x8x2x4xf32>
// CHECK: %[[TABLE:.+]] = arith.constant dense<5.000000e-01> : tensor<8x4xf32>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x8x2x4xf32>
// CHECK: %[[B:.+]] = linalg.broadcast ins(%[[TABLE]] : tensor<8x4xf32>) outs(%[[E]] : tensor<1x8x2x4xf32>) dimensions = [0, 2]
// CHECK: %[[R:.+]] = arith.mulf %[[Q]], %[[B]] : tensor<1x8x2x4xf32>
// CHECK: return %[[R]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @rotary_table(%q: tensor<1x8x4x4xf32> {lamina.layout = #lamina.layout<S(2)>}) -> (tensor<1x8x4x4xf32> {lamina.layout = #lamina.layout<S(2)>}) {
    %table = arith.constant dense<0.5> : tensor<8x4xf32>
    %e = tensor.empty() : tensor<1x8x4x4xf32>
    %b = linalg.broadcast ins(%table : tensor<8x4xf32>) outs(%e : tensor<1x8x4x4xf32>) dimensions = [0, 2]
    %r = arith.mulf %q, %b : tensor<1x8x4x4xf32>
    return %r : tensor<1x8x4x4xf32>
  }
}

// -----

// A replicated argument added to scores sharded by heads: its block of
// heads, sliced where it is.
// CHECK-LABEL: func.func @additive_mask(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<2x2x8x8xf32> {{.*}}, %[[M:[a-z0-9]+]]: tensor<2x4x8x8xf32>
// CHECK: %[[BLOCK:.+]] = shard.all_slice %[[M]] on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<2x4x8x8xf32> -> tensor<2x2x8x8xf32>
// CHECK: %[[R:.+]] = arith.addf %[[S]], %[[BLOCK]] : tensor<2x2x8x8xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @additive_mask(%s: tensor<2x4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %m: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) {
    %r = arith.addf %s, %m : tensor<2x4x8x8xf32>
    return %r : tensor<2x4x8x8xf32>
  }
}

// -----

// An axis sharded in 2 groups (the halves of a [gate; up] projection): the
// replicated operand is split into the groups, each group sliced, and
// merged again.
// CHECK-LABEL: func.func @grouped(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {{.*}}, %[[Y:[a-z0-9]+]]: tensor<4x16xf32>
// CHECK: %[[G:.+]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
// CHECK: %[[P:.+]] = shard.all_slice %[[G]] on @lamina_grid grid_axes = [0] slice_axis = 2 : tensor<4x2x8xf32> -> tensor<4x2x4xf32>
// CHECK: %[[BLOCK:.+]] = tensor.collapse_shape %[[P]] {{\[}}[0], [1, 2]] : tensor<4x2x4xf32> into tensor<4x8xf32>
// CHECK: %[[R:.+]] = arith.mulf %[[X]], %[[BLOCK]] : tensor<4x8xf32>
// CHECK: %[[FIRST:.+]] = tensor.extract_slice %[[R]][0, 0] [4, 4] [1, 1]
// CHECK: %[[SECOND:.+]] = tensor.extract_slice %[[R]][0, 4] [4, 4] [1, 1]
// CHECK: arith.addf %[[FIRST]], %[[SECOND]] : tensor<4x4xf32>
module attributes {lamina.world_size = 2 : i64} {
  func.func @grouped(%x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1, groups = 2)>}, %y: tensor<4x16xf32>) -> (tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}) {
    %r = arith.mulf %x, %y : tensor<4x16xf32>
    %first = tensor.extract_slice %r[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
    %second = tensor.extract_slice %r[0, 8] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
    %sum = arith.addf %first, %second : tensor<4x8xf32>
    return %sum : tensor<4x8xf32>
  }
}

// -----

// Grouped-query attention with keys replicated (fewer KV heads than ranks)
// and queries sharded by heads: the scores' batch matmul takes this rank's
// batches of the keys; its accumulator is built fresh at the rank's shape.
// CHECK-LABEL: func.func @replicated_keys(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<4x8x16xf32> {{.*}}, %[[K:[a-z0-9]+]]: tensor<8x16x8xf32>
// CHECK: %[[KB:.+]] = shard.all_slice %[[K]] on @lamina_grid grid_axes = [0] slice_axis = 0 : tensor<8x16x8xf32> -> tensor<4x16x8xf32>
// CHECK: %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4x8x8xf32>)
// CHECK: linalg.batch_matmul ins(%[[Q]], %[[KB]] : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%[[ACC]] : tensor<4x8x8xf32>)
module attributes {lamina.world_size = 2 : i64} {
  func.func @replicated_keys(%q: tensor<8x8x16xf32> {lamina.layout = #lamina.layout<S(0)>}, %k: tensor<8x16x8xf32>) -> (tensor<8x8x8xf32> {lamina.layout = #lamina.layout<S(0)>}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x8x8xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
    %s = linalg.batch_matmul ins(%q, %k : tensor<8x8x16xf32>, tensor<8x16x8xf32>) outs(%acc : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
    return %s : tensor<8x8x8xf32>
  }
}

// -----

// repeat_kv on keys sharded by KV heads (2 of 4 on each rank): the
// broadcast into [B, T, kv, rep, D] and the merge keep the heads sharded,
// each rank repeating its own KV heads. A rotated half concatenated with a
// replicated half along the last dim keeps the heads too.
// CHECK-LABEL: func.func @repeat_kv(
// CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<1x8x2x4xf32> {{.*}}, %[[H:[a-z0-9]+]]: tensor<1x8x8x4xf32>
// CHECK: %[[X:.+]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3], [4]] output_shape [1, 8, 2, 1, 4] : tensor<1x8x2x4xf32> into tensor<1x8x2x1x4xf32>
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3], [4]] : tensor<1x8x2x1x4xf32> into tensor<1x8x2x4xf32>
// CHECK: %[[B:.+]] = linalg.broadcast ins(%[[C]] : tensor<1x8x2x4xf32>) outs(%{{.+}} : tensor<1x8x2x2x4xf32>) dimensions = [3]
// CHECK: %[[M:.+]] = tensor.collapse_shape %[[B]] {{\[}}[0], [1], [2, 3], [4]] : tensor<1x8x2x2x4xf32> into tensor<1x8x4x4xf32>
// CHECK: %[[HB:.+]] = shard.all_slice %[[H]] on @lamina_grid grid_axes = [0] slice_axis = 2 : tensor<1x8x8x4xf32> -> tensor<1x8x4x4xf32>
// CHECK: %[[R:.+]] = tensor.concat dim(3) %[[M]], %[[HB]] : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x8xf32>
// CHECK: return %[[R]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @repeat_kv(%k: tensor<1x8x4x4xf32> {lamina.layout = #lamina.layout<S(2)>}, %h: tensor<1x8x8x4xf32>) -> (tensor<1x8x8x8xf32> {lamina.layout = #lamina.layout<S(2)>}) {
    %x = tensor.expand_shape %k [[0], [1], [2, 3], [4]] output_shape [1, 8, 4, 1, 4] : tensor<1x8x4x4xf32> into tensor<1x8x4x1x4xf32>
    %c = tensor.collapse_shape %x [[0], [1], [2, 3], [4]] : tensor<1x8x4x1x4xf32> into tensor<1x8x4x4xf32>
    %e = tensor.empty() : tensor<1x8x4x2x4xf32>
    %b = linalg.broadcast ins(%c : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x2x4xf32>) dimensions = [3]
    %m = tensor.collapse_shape %b [[0], [1], [2, 3], [4]] : tensor<1x8x4x2x4xf32> into tensor<1x8x8x4xf32>
    %r = tensor.concat dim(3) %m, %h : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x8xf32>
    return %r : tensor<1x8x8x8xf32>
  }
}

// -----

// A sum over dims other than the sharded one keeps it (moved to its place
// among the kept dims); a sum over it leaves partial sums, which the
// all_reduce makes whole.
// CHECK-LABEL: func.func @sums(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x4x8xf32>
// CHECK: %[[KEPT:.+]] = linalg.reduce ins(%[[X]] : tensor<4x4x8xf32>) outs(%{{.+}} : tensor<4x4xf32>) dimensions = [2]
// CHECK: %[[PARTIAL:.+]] = linalg.reduce ins(%[[X]] : tensor<4x4x8xf32>) outs(%{{.+}} : tensor<4x8xf32>) dimensions = [1]
// CHECK: %[[WHOLE:.+]] = shard.all_reduce %[[PARTIAL]]
// CHECK: return %[[KEPT]], %[[WHOLE]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @sums(%x: tensor<4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> (tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, tensor<4x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %kept = linalg.reduce ins(%x : tensor<4x8x8xf32>) outs(%acc : tensor<4x8xf32>) dimensions = [2]
      (%in: f32, %out: f32) {
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
    %partial = linalg.reduce ins(%x : tensor<4x8x8xf32>) outs(%acc : tensor<4x8xf32>) dimensions = [1]
      (%in: f32, %out: f32) {
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
    %whole = lamina.sync %partial <fwd_post, all_reduce> : tensor<4x8xf32>
    return %kept, %whole : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
