// RUN: lamina-opt %s --convert-lamina-to-linalg --split-input-file | FileCheck %s

// CHECK-DAG: #[[MX:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[MW:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MY:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[BIAS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @gelu_layer
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[W:.+]]: tensor<16x8xf32>, %[[B:.+]]: tensor<16xf32>)
func.func @gelu_layer(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  // Leading dims flatten into M; W stays [N, K] (transposed-B maps).
  // CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  // CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x16xf32>)
  // CHECK: %[[MM:.+]] = linalg.matmul indexing_maps = [#[[MX]], #[[MW]], #[[MY]]] {lamina.stage = #lamina<stage matmul>} ins(%[[ROWS]], %[[W]] : tensor<8x8xf32>, tensor<16x8xf32>) outs(%[[FILL]] : tensor<8x16xf32>)
  // The epilogue reads the bias broadcast over rows and overwrites the
  // accumulator in place.
  // CHECK: %[[EPI:.+]] = linalg.generic {indexing_maps = [#[[BIAS]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[B]] : tensor<16xf32>) outs(%[[MM]] : tensor<8x16xf32>) attrs = {lamina.stage = #lamina<stage epilogue>}
  // CHECK: ^bb0(%[[BV:.+]]: f32, %[[ACC:.+]]: f32):
  // CHECK: %[[SUM:.+]] = arith.addf %[[ACC]], %[[BV]]
  // CHECK: arith.constant 4.471500e-02
  // CHECK: arith.constant 0.797884583
  // CHECK: math.tanh
  // CHECK: linalg.yield
  // CHECK: tensor.expand_shape %[[EPI]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  // CHECK-NOT: lamina.
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// bf16 inputs accumulate in f32; the epilogue narrows to the bf16 result.
// CHECK-LABEL: func.func @bf16
func.func @bf16(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  // CHECK: %[[MM:.+]] = linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
  // CHECK: %[[OUT:.+]] = tensor.empty() : tensor<4x16xbf16>
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[MM]] : tensor<16xbf16>, tensor<4x16xf32>) outs(%[[OUT]] : tensor<4x16xbf16>)
  // CHECK: arith.extf %{{.*}} : bf16 to f32
  // CHECK: arith.truncf %{{.*}} : f32 to bf16
  %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Dropout on rows whose length 4 does not divide: Philox-4x32-10 per
// element, keyed by the seed, counter = (row-major index >> 2, offset,
// stream 0), word (index & 3); ten rounds of two 32x32->64 products.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: %[[SEED:[a-z0-9]+]]: i64)
func.func @dropout(%x: tensor<4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>, %seed: i64) -> tensor<4x6xf32> {
  // CHECK: linalg.generic
  // CHECK: %[[I:.+]] = linalg.index 0 : index
  // CHECK: %[[J:.+]] = linalg.index 1 : index
  // CHECK: arith.index_castui %{{.*}} : index to i64
  // CHECK: arith.shrui %{{.*}}, %c2_i64 : i64
  // CHECK: arith.andi %{{.*}}, %c3_i64 : i64
  // CHECK: arith.constant 5 : i32
  // CHECK: arith.trunci %[[SEED]] : i64 to i32
  // CHECK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
  // The drop threshold is round(0.25 * 2^32) = 1073741824; survivors scale by 1/(1-p).
  // CHECK: arith.constant 1073741824 : i64
  // CHECK: arith.cmpi uge
  // CHECK: arith.constant 1.33333337 : f32
  // CHECK: arith.select
  // CHECK-NOT: arith.muli %{{.*}}, %{{.*}} : i64
  %0 = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.25, training, offset = 5> seed %seed : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>, i64) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// Rows whose length 4 divides draw their mask beforehand, one Philox call
// per group of four (the four words interleaved as with packed weights, see
// @blocked_dropout), whatever the rank: a 3-D dropout's rows are its last
// dim, the leading dims collapsed; the epilogue reads the i8 mask.
// CHECK-LABEL: func.func @grouped_dropout
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8xf32>, %[[SEED:.+]]: i64)
func.func @grouped_dropout(%x: tensor<2x3x8xf32>, %seed: i64) -> tensor<2x3x8xf32> {
  // CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  // CHECK: %[[G:.+]]:4 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<6x2xi8>, tensor<6x2xi8>, tensor<6x2xi8>, tensor<6x2xi8>)
  // CHECK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
  // CHECK: %[[I:.+]] = linalg.generic {{.*}} ins(%[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3 : {{.*}}) outs(%{{.*}} : tensor<6x2x4xi8>)
  // CHECK: %[[M:.+]] = tensor.collapse_shape %[[I]] {{\[\[}}0], [1, 2]] : tensor<6x2x4xi8> into tensor<6x8xi8>
  // CHECK: %[[MASK:.+]] = tensor.expand_shape %[[M]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xi8> into tensor<2x3x8xi8>
  // CHECK: linalg.generic {{.*}} ins(%[[MASK]] : tensor<2x3x8xi8>) outs(%[[X]] : tensor<2x3x8xf32>)
  // CHECK: arith.trunci %{{.*}} : i8 to i1
  // CHECK-NOT: arith.muli %{{.*}}, %{{.*}} : i64
  %0 = lamina.dropout %x <p = 0.5, training> seed %seed : tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// Eval-mode dropout and a single-rank sync are the identity.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.+]]: tensor<4x16xf32>
func.func @identities(%x: tensor<4x16xf32>, %seed: i64) -> tensor<4x16xf32> {
  // CHECK-NOT: linalg
  // CHECK: return %[[X]]
  %0 = lamina.dropout %x <p = 0.5> seed %seed : tensor<4x16xf32>
  %1 = lamina.sync %0 <fwd_post, all_reduce> : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// Fused QKV: projection to [..., 3·heads·hd], viewed as [..., heads, hd, 3]
// and split on the last dim.
// CHECK-LABEL: func.func @qkv
func.func @qkv(%x: tensor<2x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) {
  // CHECK: %[[P:.+]] = linalg.generic {{.*}} attrs = {lamina.stage = #lamina<stage epilogue>}
  // CHECK: %[[S:.+]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1, 2, 3]] output_shape [2, 2, 4, 3] : tensor<2x24xf32> into tensor<2x2x4x3xf32>
  // CHECK: %[[Q:.+]] = tensor.extract_slice %[[S]][0, 0, 0, 0] [2, 2, 4, 1] [1, 1, 1, 1] : tensor<2x2x4x3xf32> to tensor<2x2x4xf32>
  // CHECK: %[[K:.+]] = tensor.extract_slice %[[S]][0, 0, 0, 1] [2, 2, 4, 1] [1, 1, 1, 1] : tensor<2x2x4x3xf32> to tensor<2x2x4xf32>
  // CHECK: %[[V:.+]] = tensor.extract_slice %[[S]][0, 0, 0, 2] [2, 2, 4, 1] [1, 1, 1, 1] : tensor<2x2x4x3xf32> to tensor<2x2x4xf32>
  // CHECK: return %[[Q]], %[[K]], %[[V]]
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 2 world_size 1 : (tensor<2x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  return %q, %k, %v : tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>
}

// -----

// Primitives on their own, and a rank-1 input (M = 1).
// CHECK-LABEL: func.func @primitives
func.func @primitives(%x: tensor<8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  // CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  // CHECK: linalg.matmul
  // CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<1x16xf32> into tensor<16xf32>
  // CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<16xf32>) outs(%{{.*}} : tensor<16xf32>)
  // CHECK: arith.addf
  // CHECK: linalg.generic
  // CHECK: arith.maximumf
  %0 = lamina.matmul %x, %w : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
  %1 = lamina.bias_add %0, %b : tensor<16xf32>, tensor<16xf32>
  %2 = lamina.activation relu %1 : tensor<16xf32>
  return %2 : tensor<16xf32>
}

// -----

// LNS layers lower to the lns dialect, which keeps the reference order.
// CHECK-LABEL: func.func @lns
func.func @lns(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>, %b: tensor<16x!lns.num<f = 12>>) -> (tensor<4x16x!lns.num<f = 10>>, tensor<4x16x!lns.num<f = 10>>) {
  // CHECK: lns.linear %{{.*}}, %{{.*}} bias %{{.*}} : tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 12>> -> tensor<4x16x!lns.num<f = 10>>
  %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 10>>
  // CHECK: %[[M:.+]] = lns.linear %{{.*}}, %{{.*}} : tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>> -> tensor<4x16x!lns.num<f = 10>>
  // CHECK: %[[BB:.+]] = linalg.broadcast ins(%{{.*}} : tensor<16x!lns.num<f = 12>>) outs(%{{.*}} : tensor<4x16x!lns.num<f = 12>>) dimensions = [0]
  // CHECK: lns.add %[[M]], %[[BB]] : tensor<4x16x!lns.num<f = 10>>, tensor<4x16x!lns.num<f = 12>>
  %1 = lamina.matmul %x, %w : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  %2 = lamina.bias_add %1, %b : tensor<4x16x!lns.num<f = 10>>, tensor<16x!lns.num<f = 12>>
  return %0, %2 : tensor<4x16x!lns.num<f = 10>>, tensor<4x16x!lns.num<f = 10>>
}

// -----

// RUN: lamina-opt %s --lamina-select-cpu-strategy --convert-lamina-to-linalg --split-input-file | FileCheck %s --check-prefix=BLOCK

// With weight_block = 16, W[32, 8] is packed into [2, 8, 16], the matmul is a
// generic over (m, n1, n0, k) on the [M, 2, 16] view of the output, the bias
// is viewed as [2, 16]; N = 24 is not a multiple of 16 and stays unpacked.
// BLOCK-LABEL: func.func @blocked
// BLOCK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<32x8xf32>, %[[B:.+]]: tensor<32xf32>, %[[W2:.+]]: tensor<24x8xf32>)
func.func @blocked(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>, %w2: tensor<24x8xf32>) -> (tensor<4x32xf32>, tensor<4x24xf32>) {
  // BLOCK: %[[P:.+]] = linalg.pack %[[W]] inner_dims_pos = [0] inner_tiles = [16] into %{{.*}} : tensor<32x8xf32> -> tensor<2x8x16xf32>
  // BLOCK: %[[MM:.+]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]], %[[P]] : tensor<4x8xf32>, tensor<2x8x16xf32>) outs(%{{.*}} : tensor<4x2x16xf32>) attrs = {lamina.codegen = #lamina.cpu_matmul<{{.*}}>, lamina.stage = #lamina<stage matmul>}
  // BLOCK: %[[B2:.+]] = tensor.expand_shape %[[B]] {{\[\[}}0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
  // BLOCK: %[[E:.+]] = linalg.generic {{.*}} ins(%[[B2]] : tensor<2x16xf32>) outs(%[[MM]] : tensor<4x2x16xf32>) attrs = {lamina.stage = #lamina<stage epilogue>}
  // BLOCK: tensor.collapse_shape %[[E]] {{\[\[}}0], [1, 2]] : tensor<4x2x16xf32> into tensor<4x32xf32>
  // BLOCK: linalg.matmul {{.*}} ins(%[[X]], %[[W2]] : tensor<4x8xf32>, tensor<24x8xf32>)
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %1 = lamina.linear "odd" %x, %w2 : (tensor<4x8xf32>, tensor<24x8xf32>) -> tensor<4x24xf32>
  return %0, %1 : tensor<4x32xf32>, tensor<4x24xf32>
}

// -----

// A weight that is a transpose of T[K, N] (the backward's dx = dy·W) is
// packed from T itself: Wp[n1, k, n0] = T[k, 16·n1 + n0], rows of 16
// contiguous elements; the transpose is left unused.
// BLOCK-LABEL: func.func @blocked_transposed_weight
// BLOCK-SAME: (%[[DY:.+]]: tensor<4x8xf32>, %[[T:.+]]: tensor<8x32xf32>)
func.func @blocked_transposed_weight(%dy: tensor<4x8xf32>, %t: tensor<8x32xf32>) -> tensor<4x32xf32> {
  // BLOCK: %[[P:.+]] = linalg.pack %[[T]] outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16] into %{{.*}} : tensor<8x32xf32> -> tensor<2x8x16xf32>
  // BLOCK: linalg.generic {{.*}} ins(%[[DY]], %[[P]] : tensor<4x8xf32>, tensor<2x8x16xf32>)
  %e = tensor.empty() : tensor<32x8xf32>
  %w = linalg.transpose ins(%t : tensor<8x32xf32>) outs(%e : tensor<32x8xf32>) permutation = [1, 0]
  %0 = lamina.matmul "fc" %dy, %w : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

// The backward's dH = (dY·W)·GELU′(x): the derivative is the epilogue of the
// matmul (x viewed like the [M, N/16, 16] accumulator), no pass of its own.
// A matmul whose result is used again keeps its own epilogue-free form.
// BLOCK-LABEL: func.func @activation_grad_of_matmul
// BLOCK-SAME: (%[[DY:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<32x8xf32>, %[[X:.+]]: tensor<4x32xf32>)
func.func @activation_grad_of_matmul(%dy: tensor<4x8xf32>, %w: tensor<32x8xf32>, %x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  // BLOCK: %[[MM:.+]] = linalg.generic {{.*}} ins(%[[DY]], %{{.*}} : tensor<4x8xf32>, tensor<2x8x16xf32>) {{.*}} attrs = {lamina.codegen = #lamina.cpu_matmul<{{.*}}>, lamina.stage = #lamina<stage matmul>}
  // BLOCK: %[[XV:.+]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] output_shape [4, 2, 16] : tensor<4x32xf32> into tensor<4x2x16xf32>
  // BLOCK: %[[E:.+]] = linalg.generic {{.*}} ins(%[[XV]] : tensor<4x2x16xf32>) outs(%[[MM]] : tensor<4x2x16xf32>) attrs = {lamina.stage = #lamina<stage epilogue>}
  // BLOCK: math.tanh
  // BLOCK: tensor.collapse_shape %[[E]]
  // BLOCK-NOT: lamina.activation_grad
  %dh = lamina.matmul "fc2" %dy, %w : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  %g = lamina.activation_grad "fc1" gelu_tanh %x, %dh : tensor<4x32xf32>
  // BLOCK: linalg.generic {{.*}} attrs = {lamina.codegen = #lamina.cpu_matmul<{{.*}}>, lamina.stage = #lamina<stage matmul>}
  // BLOCK: linalg.generic {{.*}} ins(%[[X]], %{{.*}} : tensor<4x32xf32>, tensor<4x32xf32>)
  %dh2 = lamina.matmul "fc2" %dy, %w : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  %g2 = lamina.activation_grad "fc1" relu %x, %dh2 : tensor<4x32xf32>
  return %g, %g2, %dh2 : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// With packed weights, the mask comes from one Philox call per four
// elements: a generic over (m, N/4) with four i8 results; an element-wise
// generic over [M, N/4, 4] interleaves them (word w of group g: element
// 4g + w, chosen by the index of its last dim), collapsed to [M, N] and
// viewed like the [M, N/16, 16] accumulator.
// BLOCK-DAG: #[[GROUP:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// BLOCK-DAG: #[[ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// BLOCK-LABEL: func.func @blocked_dropout
func.func @blocked_dropout(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>, %s: i64) -> tensor<4x32xf32> {
  // BLOCK: %[[G:.+]]:4 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xi8>, tensor<4x8xi8>, tensor<4x8xi8>, tensor<4x8xi8>)
  // BLOCK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
  // BLOCK: linalg.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i8, i8, i8, i8
  // BLOCK: %[[I:.+]] = linalg.generic {indexing_maps = [#[[GROUP]], #[[GROUP]], #[[GROUP]], #[[GROUP]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3 : tensor<4x8xi8>, tensor<4x8xi8>, tensor<4x8xi8>, tensor<4x8xi8>) outs(%{{.*}} : tensor<4x8x4xi8>)
  // BLOCK-NEXT: ^bb0(%[[W0:.+]]: i8, %[[W1:.+]]: i8, %[[W2:.+]]: i8, %[[W3:.+]]: i8, %{{.*}}: i8):
  // BLOCK-NEXT: %[[WORD:.+]] = linalg.index 2 : index
  // BLOCK-NEXT: %[[C2:.+]] = arith.constant 2 : index
  // BLOCK-NEXT: %[[IS2:.+]] = arith.cmpi eq, %[[WORD]], %[[C2]] : index
  // BLOCK-NEXT: %[[S2:.+]] = arith.select %[[IS2]], %[[W2]], %[[W3]] : i8
  // BLOCK-NEXT: %[[C1:.+]] = arith.constant 1 : index
  // BLOCK-NEXT: %[[IS1:.+]] = arith.cmpi eq, %[[WORD]], %[[C1]] : index
  // BLOCK-NEXT: %[[S1:.+]] = arith.select %[[IS1]], %[[W1]], %[[S2]] : i8
  // BLOCK-NEXT: %[[C0:.+]] = arith.constant 0 : index
  // BLOCK-NEXT: %[[IS0:.+]] = arith.cmpi eq, %[[WORD]], %[[C0]] : index
  // BLOCK-NEXT: %[[S0:.+]] = arith.select %[[IS0]], %[[W0]], %[[S1]] : i8
  // BLOCK-NEXT: linalg.yield %[[S0]] : i8
  // BLOCK: %[[ROWS:.+]] = tensor.collapse_shape %[[I]] {{\[\[}}0], [1, 2]] : tensor<4x8x4xi8> into tensor<4x32xi8>
  // BLOCK: %[[M:.+]] = tensor.expand_shape %[[ROWS]] {{\[\[}}0], [1, 2]] output_shape [4, 2, 16] : tensor<4x32xi8> into tensor<4x2x16xi8>
  // BLOCK: linalg.generic {{.*}} ins(%{{.*}}, %[[M]] : tensor<2x16xf32>, tensor<4x2x16xi8>) outs(%{{.*}} : tensor<4x2x16xf32>) attrs = {lamina.stage = #lamina<stage epilogue>}
  // BLOCK: arith.trunci %{{.*}} : i8 to i1
  // BLOCK-NOT: arith.muli %{{.*}}, %{{.*}} : i64
  %0 = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.5, training> seed %s : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<32xf32>, i64) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

// RUN: lamina-opt %s --lamina-select-cpu-strategy=vector-bits=512 --convert-lamina-to-linalg --split-input-file | FileCheck %s --check-prefix=PANEL

// With row_panel = 8, an input that is a transpose of T[K, M] (the
// backward's dW = dyᵀ·x) is packed from T itself into [M/8, K, 8]
// (Xp[m1, k, m0] = T[k, 8·m1 + m0]): the matmul is a generic over
// (m1, m0, n1, n0, k) into [M/8, 8, N/16, 16], collapsed to [M, N/16, 16]
// and then [M, N]; neither transpose is used.
// PANEL-DAG: #[[PANELS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1)>
// PANEL-DAG: #[[BLOCKS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d4, d3)>
// PANEL-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// PANEL-LABEL: func.func @row_panels
// PANEL-SAME: (%[[DY:.+]]: tensor<4x16xf32>, %[[X:.+]]: tensor<4x32xf32>)
// PANEL: %[[P:.+]] = linalg.pack %[[DY]] outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [8] into %{{.*}} : tensor<4x16xf32> -> tensor<2x4x8xf32>
// PANEL: %[[W:.+]] = linalg.pack %[[X]] outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [16] into %{{.*}} : tensor<4x32xf32> -> tensor<2x4x16xf32>
// PANEL: %[[MM:.+]] = linalg.generic {indexing_maps = [#[[PANELS]], #[[BLOCKS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[W]] : tensor<2x4x8xf32>, tensor<2x4x16xf32>) outs(%{{.*}} : tensor<2x8x2x16xf32>) attrs = {lamina.codegen = #lamina.cpu_matmul<{{.*}}>, lamina.stage = #lamina<stage matmul>}
// PANEL: %[[ROWS:.+]] = tensor.collapse_shape %[[MM]] {{\[\[}}0, 1], [2], [3]] : tensor<2x8x2x16xf32> into tensor<16x2x16xf32>
// PANEL: %[[Y:.+]] = tensor.collapse_shape %[[ROWS]] {{\[\[}}0], [1, 2]] : tensor<16x2x16xf32> into tensor<16x32xf32>
// PANEL: return %[[Y]]
func.func @row_panels(%dy: tensor<4x16xf32>, %x: tensor<4x32xf32>) -> tensor<16x32xf32> {
  %dyt_init = tensor.empty() : tensor<16x4xf32>
  %dyt = linalg.transpose ins(%dy : tensor<4x16xf32>) outs(%dyt_init : tensor<16x4xf32>) permutation = [1, 0]
  %xt_init = tensor.empty() : tensor<32x4xf32>
  %xt = linalg.transpose ins(%x : tensor<4x32xf32>) outs(%xt_init : tensor<32x4xf32>) permutation = [1, 0]
  %dw = lamina.matmul "fc" %dyt, %xt : (tensor<16x4xf32>, tensor<32x4xf32>) -> tensor<16x32xf32>
  return %dw : tensor<16x32xf32>
}

// -----

// Left as the transpose and the (m, n1, n0, k) generic: M = 12 is not a
// multiple of the panel; an epilogue (here a bias) keeps the [M, N/16, 16]
// accumulator it runs on; an input that is not a transpose.
// PANEL-LABEL: func.func @no_row_panels
// PANEL-NOT: inner_tiles = [8]
// PANEL: linalg.transpose
// PANEL: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}}outs(%{{.*}} : tensor<12x2x16xf32>)
// PANEL: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}}outs(%{{.*}} : tensor<16x2x16xf32>)
// PANEL: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}}outs(%{{.*}} : tensor<8x2x16xf32>)
// PANEL-NOT: inner_tiles = [8]
// PANEL: return
func.func @no_row_panels(%dy: tensor<4x12xf32>, %dy2: tensor<4x16xf32>, %x: tensor<8x4xf32>, %w: tensor<32x4xf32>, %b: tensor<32xf32>) -> (tensor<12x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>) {
  %t_init = tensor.empty() : tensor<12x4xf32>
  %t = linalg.transpose ins(%dy : tensor<4x12xf32>) outs(%t_init : tensor<12x4xf32>) permutation = [1, 0]
  %0 = lamina.matmul "a" %t, %w : (tensor<12x4xf32>, tensor<32x4xf32>) -> tensor<12x32xf32>
  %t2_init = tensor.empty() : tensor<16x4xf32>
  %t2 = linalg.transpose ins(%dy2 : tensor<4x16xf32>) outs(%t2_init : tensor<16x4xf32>) permutation = [1, 0]
  %1 = lamina.linear "b" %t2, %w bias %b : (tensor<16x4xf32>, tensor<32x4xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  %2 = lamina.matmul "c" %x, %w : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
  return %0, %1, %2 : tensor<12x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>
}

// -----

// The lowering follows the layout under lamina.codegen, whoever chose it:
// blocks of 8 features; bf16 operands summed in bf16 (the strategy's
// choice would be f32), with no epilogue to round the sums.
// BLOCK-LABEL: func.func @written_layout
// BLOCK: linalg.pack %{{.*}} inner_dims_pos = [0] inner_tiles = [8] into %{{.*}} : tensor<32x8xbf16> -> tensor<4x8x8xbf16>
// BLOCK: %[[MM:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x4x8xbf16>) attrs = {lamina.codegen = #lamina.cpu_matmul<{{.*}}>, lamina.stage = #lamina<stage matmul>}
// BLOCK-NEXT: ^bb0(%[[A:.+]]: bf16, %[[B:.+]]: bf16, %[[ACC:.+]]: bf16):
// BLOCK-NEXT: %[[P:.+]] = arith.mulf %[[A]], %[[B]] : bf16
// BLOCK-NEXT: arith.addf %[[ACC]], %[[P]] : bf16
// BLOCK-NOT: lamina.stage = #lamina<stage epilogue>
// BLOCK: tensor.collapse_shape %[[MM]]
func.func @written_layout(%x: tensor<4x8xbf16>, %w: tensor<32x8xbf16>) -> tensor<4x32xbf16> {
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 8, accumulator = bf16>} : (tensor<4x8xbf16>, tensor<32x8xbf16>) -> tensor<4x32xbf16>
  return %0 : tensor<4x32xbf16>
}

// -----

// A dropout's offset_base joins the counter word of its offset: the
// offset's constant plus the base's low 32 bits.
// CHECK-LABEL: func.func @offset_base
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[SEED:.+]]: i64, %[[BASE:.+]]: i64)
// CHECK: linalg.generic
// CHECK: %[[WORD:.+]] = arith.constant 3 : i32
// CHECK: %[[LOW:.+]] = arith.trunci %[[BASE]] : i64 to i32
// CHECK: arith.addi %[[WORD]], %[[LOW]] : i32
func.func @offset_base(%x: tensor<4x8xf32>, %seed: i64, %base: i64) -> tensor<4x8xf32> {
  %0 = lamina.dropout %x <p = 0.5, training, offset = 3> seed %seed offset_base %base : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
