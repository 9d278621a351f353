// RUN: lamina-opt %s --convert-lamina-to-linalg --split-input-file | FileCheck %s

// nn.Embedding: y[b, t, c] = W[clamp(idx[b, t], 0, V - 1), c], a gather
// generic over the result whose body reads the weight at the index.
// CHECK-DAG: #[[IDX:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[I:[a-z0-9]+]]: tensor<2x8xi64>, %[[W:[a-z0-9]+]]: tensor<64x32xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[I]] : tensor<2x8xi64>)
// CHECK: ^bb0(%[[V:.+]]: i64, %{{.+}}: f32):
// CHECK: %[[CAST:.+]] = arith.index_cast %[[V]] : i64 to index
// CHECK: %[[LOW:.+]] = arith.maxsi %[[CAST]], %c0
// CHECK: %[[ROW:.+]] = arith.minsi %[[LOW]], %c63
// CHECK: %[[COL:.+]] = linalg.index 2 : index
// CHECK: %[[E:.+]] = tensor.extract %[[W]][%[[ROW]], %[[COL]]] : tensor<64x32xf32>
// CHECK: linalg.yield %[[E]] : f32
func.func @embedding(%idx: tensor<2x8xi64>, %w: tensor<64x32xf32>) -> tensor<2x8x32xf32> {
  %0 = lamina.embedding "wte" %idx, %w : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// Its gradient: zeros [V, C], then token by token (16 = 2·8 of them) the
// cotangent's row added into the weight row it was read from, unless the
// index is outside [0, 64) or the padding row 3.
// CHECK-LABEL: func.func @embedding_grad
// CHECK-SAME: (%[[I:[a-z0-9]+]]: tensor<2x8xi64>, %[[DY:[a-z0-9]+]]: tensor<2x8x32xf32>)
// CHECK: %[[FI:.+]] = tensor.collapse_shape %[[I]] {{\[}}[0, 1]] : tensor<2x8xi64> into tensor<16xi64>
// CHECK: %[[FDY:.+]] = tensor.collapse_shape %[[DY]] {{\[}}[0, 1], [2]] : tensor<2x8x32xf32> into tensor<16x32xf32>
// CHECK: %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<64x32xf32>)
// CHECK: scf.for %[[N:.+]] = %c0 to %c16 step %c1 iter_args(%[[ACC:.+]] = %[[ZEROS]]) -> (tensor<64x32xf32>)
// CHECK: %[[V:.+]] = tensor.extract %[[FI]][%[[N]]] : tensor<16xi64>
// CHECK: arith.cmpi sge, %[[V]], %c0_i64
// CHECK: arith.cmpi slt, %[[V]], %c64_i64
// CHECK: arith.cmpi ne, %[[V]], %c3_i64
// CHECK: %[[SRC:.+]] = tensor.extract_slice %[[FDY]][%[[N]], 0] [1, 32] [1, 1] : tensor<16x32xf32> to tensor<32xf32>
// CHECK: %[[DST:.+]] = tensor.extract_slice %[[ACC]][%[[R:.+]], 0] [1, 32] [1, 1] : tensor<64x32xf32> to tensor<32xf32>
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[SRC]] : tensor<32xf32>) outs(%[[DST]] : tensor<32xf32>)
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: %[[NEXT:.+]] = tensor.insert_slice %[[SUM]] into %[[ACC]][%[[R]], 0] [1, 32] [1, 1]
// CHECK: scf.yield %[[NEXT]] : tensor<64x32xf32>
func.func @embedding_grad(%idx: tensor<2x8xi64>, %dy: tensor<2x8x32xf32>) -> tensor<64x32xf32> {
  %0 = lamina.embedding_grad %idx, %dy padding_idx 3 : (tensor<2x8xi64>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

// masked_fill with a causal mask [1, 1, T, T] over scores [B, H, T, T]:
// the mask's broadcast dims read its element 0; -inf as f32.
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[MASK:.+]] = affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>
// CHECK-LABEL: func.func @masked_fill
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {indexing_maps = [#[[FULL]], #[[MASK]], #[[FULL]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: ^bb0(%[[X:.+]]: f32, %[[M:.+]]: i1, %{{.+}}: f32):
// CHECK: %[[Y:.+]] = arith.select %[[M]], %[[NEGINF]], %[[X]] : f32
// CHECK: linalg.yield %[[Y]] : f32
func.func @masked_fill(%s: tensor<2x4x8x8xf32>, %m: tensor<1x1x8x8xi1>) -> tensor<2x4x8x8xf32> {
  %0 = lamina.masked_fill %s, %m value 0xFFF0000000000000 : tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

// Cross-entropy, mean over the targets that are not -1:
//   max_n = max_v x, s_n = Σ_v exp(x − max_n), p_n = x[n, t_n] (0 for a
//   target outside [0, 64)),
//   loss = Σ_n [t_n ≠ −1]·(log s_n + max_n − p_n) / Σ_n [t_n ≠ −1].
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:.+]]: tensor<16x64xf32>,
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[S:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: %[[P:.+]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.+}} : tensor<16xi64>) outs(%{{.+}} : tensor<16xf32>)
// CHECK: %[[N:.+]] = linalg.index 0 : index
// CHECK: %[[T:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: %[[LOW:.+]] = arith.maxsi %[[T]], %c0
// CHECK: %[[COL:.+]] = arith.minsi %[[LOW]], %c63
// CHECK: %[[XT:.+]] = tensor.extract %[[X]][%[[N]], %[[COL]]] : tensor<16x64xf32>
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: arith.select %{{.+}}, %[[XT]], %{{.+}} : f32
// CHECK: %[[TOTAL:.+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[MAX]], %[[S]], %[[P]], %{{.+}} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi64>) outs(%{{.+}} : tensor<f32>)
// CHECK: math.log
// CHECK: arith.cmpi ne, %{{.+}}, %c-1_i64
// CHECK: %[[COUNT:.+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.+}} : tensor<16xi64>) outs(%{{.+}} : tensor<f32>)
// CHECK: %[[MEAN:.+]] = arith.divf %[[TOTAL]], %[[COUNT]] : tensor<f32>
// CHECK: return %[[MEAN]]
func.func @cross_entropy(%x: tensor<16x64xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %0 = lamina.cross_entropy %x, %t ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Summed: no count.
// CHECK-LABEL: func.func @summed_cross_entropy
// CHECK-NOT: arith.divf
// CHECK: return
func.func @summed_cross_entropy(%x: tensor<16x64xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %0 = lamina.cross_entropy %x, %t ignore_index -1 sum : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Its gradient (sum): dx = dl·(exp(x − max_n)/s_n − [v = t_n]), zero rows
// for ignored targets; the 0-d cotangent broadcast by an empty map.
// CHECK-DAG: #[[SCALAR:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK-SAME: %[[DL:[a-z0-9]+]]: tensor<f32>)
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}, #[[SCALAR]], #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[DL]] : tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi64>, tensor<f32>)
// CHECK: %[[E:.+]] = math.exp
// CHECK: %[[PROB:.+]] = arith.divf %[[E]]
// CHECK: %[[HOT:.+]] = arith.select
// CHECK: %[[D:.+]] = arith.subf %[[PROB]], %[[HOT]]
// CHECK: arith.mulf %{{.+}}, %[[D]]
func.func @cross_entropy_grad(%x: tensor<16x64xf32>, %t: tensor<16xi64>, %dl: tensor<f32>) -> tensor<16x64xf32> {
  %0 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 sum : (tensor<16x64xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// One loss per row (reduction none): the rows' losses, 0 where the target
// is ignored, with no reduction over the rows.
// CHECK-LABEL: func.func @per_row_cross_entropy
// CHECK: %[[LOSSES:.+]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi64>) outs(%{{.+}} : tensor<16xf32>)
// CHECK: math.log
// CHECK: arith.select
// CHECK-NOT: arith.divf
// CHECK: return %[[LOSSES]] : tensor<16xf32>
func.func @per_row_cross_entropy(%x: tensor<16x64xf32>, %t: tensor<16xi64>) -> tensor<16xf32> {
  %0 = lamina.cross_entropy %x, %t ignore_index -1 none : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// Its gradient: row n's cotangent dl[n] read by the row map; no count
// among the inputs.
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @per_row_cross_entropy_grad
// CHECK-SAME: %[[DL:[a-z0-9]+]]: tensor<16xf32>)
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[ROW]], #[[ROW]], #[[ROW]], #[[ROW]], #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[DL]] : tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi64>, tensor<16xf32>)
// CHECK: arith.mulf
func.func @per_row_cross_entropy_grad(%x: tensor<16x64xf32>, %t: tensor<16xi64>, %dl: tensor<16xf32>) -> tensor<16x64xf32> {
  %0 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 none : (tensor<16x64xf32>, tensor<16xi64>, tensor<16xf32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// Vocabulary parallel: rank %r holds classes [32·r, 32·r + 32) of 64. The
// row maxima are all-reduced by max, the sums of exp(x − max) and the
// picked target logits (0 on the ranks not holding the target) by sum; a
// target's column in the block is the target less the block's first class.
// CHECK-LABEL: func.func @vocabulary_parallel_cross_entropy
// CHECK-SAME: %[[R:[a-z0-9]+]]: index)
// CHECK: %[[LMAX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[MAX:.+]] = shard.all_reduce %[[LMAX]] on @lamina_grid grid_axes = [0] reduction = max : tensor<16xf32> -> tensor<16xf32>
// CHECK: %[[LS:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[MAX]] : tensor<16x32xf32>, tensor<16xf32>)
// CHECK: math.exp
// CHECK: %[[S:.+]] = shard.all_reduce %[[LS]] on @lamina_grid grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
// CHECK: %[[R64:.+]] = arith.index_cast %[[R]] : index to i64
// CHECK: %[[FIRST:.+]] = arith.muli %[[R64]], %c32_i64 : i64
// CHECK: %[[LP:.+]] = linalg.generic {{.*}} iterator_types = ["parallel"]}
// CHECK: %[[COL:.+]] = arith.subi %{{.+}}, %[[FIRST]] : i64
// CHECK: tensor.extract
// CHECK: arith.cmpi sge, %[[COL]]
// CHECK: arith.cmpi slt, %[[COL]]
// CHECK: %[[P:.+]] = shard.all_reduce %[[LP]] on @lamina_grid grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[MAX]], %[[S]], %[[P]], %{{.+}} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi64>) outs(%{{.+}} : tensor<f32>)
shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @vocabulary_parallel_cross_entropy(%x: tensor<16x32xf32>, %t: tensor<16xi64>, %r: index) -> tensor<f32> {
  %0 = lamina.cross_entropy %x, %t ignore_index -1 shards 2 rank %r : (tensor<16x32xf32>, tensor<16xi64>, index) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Its gradient: the block of the softmax from the all-reduced statistics,
// less the one-hot target at the block's classes; nothing gathered.
// CHECK-LABEL: func.func @vocabulary_parallel_cross_entropy_grad
// CHECK: shard.all_reduce %{{.+}} reduction = max : tensor<16xf32> -> tensor<16xf32>
// CHECK: shard.all_reduce %{{.+}} : tensor<16xf32> -> tensor<16xf32>
// CHECK-NOT: shard.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.+}} : tensor<16x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi64>, tensor<f32>, tensor<f32>) outs(%{{.+}} : tensor<16x32xf32>)
// CHECK: arith.addi
// CHECK: arith.cmpi eq
// CHECK-NOT: shard.
// CHECK: return
shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @vocabulary_parallel_cross_entropy_grad(%x: tensor<16x32xf32>, %t: tensor<16xi64>, %dl: tensor<f32>, %r: index) -> tensor<16x32xf32> {
  %0 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 shards 2 rank %r : (tensor<16x32xf32>, tensor<16xi64>, tensor<f32>, index) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

// rope, interleaved: x [2, 16, 4, 32] viewed [2, 16, 4, 16, 2]; a and b the
// pair dim's slices 0 and 1; one generic over the view writes
// a·cos − b·sin where the pair dim (d4) is 0, a·sin + b·cos where it is 1.
// The tables [1, 16, 1, 16] broadcast over the batch and the heads.
// CHECK-DAG: #[[PIECE:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[TABLE:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d1, 0, d3)>
// CHECK-DAG: #[[VIEW:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @rope_interleaved
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x4x32xf32>, %[[C:.+]]: tensor<1x16x1x16xf32>, %[[S:.+]]: tensor<1x16x1x16xf32>)
// CHECK: %[[V:.+]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [2, 16, 4, 16, 2]
// CHECK: %[[A:.+]] = tensor.extract_slice %[[V]][0, 0, 0, 0, 0] [2, 16, 4, 16, 1] [1, 1, 1, 1, 1] : tensor<2x16x4x16x2xf32> to tensor<2x16x4x16xf32>
// CHECK: %[[B:.+]] = tensor.extract_slice %[[V]][0, 0, 0, 0, 1] [2, 16, 4, 16, 1] [1, 1, 1, 1, 1] : tensor<2x16x4x16x2xf32> to tensor<2x16x4x16xf32>
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[PIECE]], #[[PIECE]], #[[TABLE]], #[[TABLE]], #[[VIEW]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[A]], %[[B]], %[[C]], %[[S]] :
// CHECK: ^bb0(%[[a:.+]]: f32, %[[b:.+]]: f32, %[[c:.+]]: f32, %[[s:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[AC:.+]] = arith.mulf %[[a]], %[[c]]
// CHECK: %[[BS:.+]] = arith.mulf %[[b]], %[[s]]
// CHECK: %[[FIRST:.+]] = arith.subf %[[AC]], %[[BS]]
// CHECK: %[[AS:.+]] = arith.mulf %[[a]], %[[s]]
// CHECK: %[[BC:.+]] = arith.mulf %[[b]], %[[c]]
// CHECK: %[[SECOND:.+]] = arith.addf %[[AS]], %[[BC]]
// CHECK: %[[I:.+]] = linalg.index 4 : index
// CHECK: %[[IS0:.+]] = arith.cmpi eq, %[[I]], %c0
// CHECK: %[[Y:.+]] = arith.select %[[IS0]], %[[FIRST]], %[[SECOND]] : f32
// CHECK: linalg.yield %[[Y]]
// CHECK: tensor.collapse_shape %[[R]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<2x16x4x16x2xf32> into tensor<2x16x4x32xf32>
func.func @rope_interleaved(%x: tensor<2x16x4x32xf32>, %cos: tensor<1x16x1x16xf32>, %sin: tensor<1x16x1x16xf32>) -> tensor<2x16x4x32xf32> {
  %0 = lamina.rope %x, %cos, %sin interleaved : tensor<2x16x4x32xf32>, tensor<1x16x1x16xf32>
  return %0 : tensor<2x16x4x32xf32>
}

// -----

// rope, halves: x [3, 8] viewed [3, 2, 4]; the pair dim (d1) comes before
// the angle dim (d2), the first half's elements pairing with the second's.
// CHECK-DAG: #[[PIECE:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @rope_halves
// CHECK: %[[V:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [3, 2, 4]
// CHECK: tensor.extract_slice %[[V]][0, 0, 0] [3, 1, 4] [1, 1, 1] : tensor<3x2x4xf32> to tensor<3x4xf32>
// CHECK: tensor.extract_slice %[[V]][0, 1, 0] [3, 1, 4] [1, 1, 1] : tensor<3x2x4xf32> to tensor<3x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[PIECE]], #[[PIECE]], #[[PIECE]], #[[PIECE]], #{{.+}}]
// CHECK: linalg.index 1 : index
func.func @rope_halves(%x: tensor<3x8xf32>, %cos: tensor<3x4xf32>, %sin: tensor<3x4xf32>) -> tensor<3x8xf32> {
  %0 = lamina.rope %x, %cos, %sin halves : tensor<3x8xf32>, tensor<3x4xf32>
  return %0 : tensor<3x8xf32>
}
