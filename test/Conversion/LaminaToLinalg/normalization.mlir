// RUN: lamina-opt %s --convert-lamina-to-linalg --split-input-file | FileCheck %s

// nn.LayerNorm over the last dim (C = 32), in its order of operations:
// Σx, mean = Σx / C, Σ(x − mean)², then
// (x − mean) · rsqrt(Σ(x − mean)² / C + eps) · weight + bias.
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[PERROW:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[LAST:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @weight_and_bias
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x8x32xf32>, %[[W:[a-z0-9]+]]: tensor<32xf32>, %[[B:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-DAG: %[[C:.+]] = arith.constant 3.200000e+01 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// Σx: one row accumulator per leading index, zero-filled.
// CHECK: %[[ACC1:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<2x8x32xf32>) outs(%[[ACC1]] : tensor<2x8xf32>)
// CHECK: ^bb0(%[[SX:.+]]: f32, %[[SACC:.+]]: f32):
// CHECK: %[[SNEXT:.+]] = arith.addf %[[SACC]], %[[SX]] : f32
// CHECK: linalg.yield %[[SNEXT]] : f32
// mean = Σx / C, row by row.
// CHECK: %[[MEAN:.+]] = linalg.generic {indexing_maps = [#[[PERROW]], #[[PERROW]]], iterator_types = ["parallel", "parallel"]} ins(%[[SUM]] : tensor<2x8xf32>)
// CHECK: ^bb0(%[[MS:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[MQ:.+]] = arith.divf %[[MS]], %[[C]] : f32
// CHECK: linalg.yield %[[MQ]] : f32
// Σ(x − mean)²: the biased variance times C.
// CHECK: %[[ACC2:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[SQ:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[MEAN]] : tensor<2x8x32xf32>, tensor<2x8xf32>) outs(%[[ACC2]] : tensor<2x8xf32>)
// CHECK: ^bb0(%[[QX:.+]]: f32, %[[QM:.+]]: f32, %[[QACC:.+]]: f32):
// CHECK: %[[QD:.+]] = arith.subf %[[QX]], %[[QM]] : f32
// CHECK: %[[QD2:.+]] = arith.mulf %[[QD]], %[[QD]] : f32
// CHECK: %[[QNEXT:.+]] = arith.addf %[[QACC]], %[[QD2]] : f32
// CHECK: linalg.yield %[[QNEXT]] : f32
// The element-wise generic: weight and bias broadcast along the rows.
// CHECK: %[[OUT:.+]] = tensor.empty() : tensor<2x8x32xf32>
// eps = 1e-05 rounded to f32.
// CHECK: %[[EPS:.+]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]], #[[LAST]], #[[LAST]], #[[FULL]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[MEAN]], %[[SQ]], %[[W]], %[[B]] : tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<32xf32>, tensor<32xf32>) outs(%[[OUT]] : tensor<2x8x32xf32>)
// CHECK: ^bb0(%[[EX:.+]]: f32, %[[EM:.+]]: f32, %[[ESQ:.+]]: f32, %[[EW:.+]]: f32, %[[EB:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[VAR:.+]] = arith.divf %[[ESQ]], %[[C]] : f32
// CHECK: %[[SHIFTED:.+]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK: %[[SCALE:.+]] = math.rsqrt %[[SHIFTED]] : f32
// CHECK: %[[D:.+]] = arith.subf %[[EX]], %[[EM]] : f32
// CHECK: %[[N:.+]] = arith.mulf %[[D]], %[[SCALE]] : f32
// CHECK: %[[NW:.+]] = arith.mulf %[[N]], %[[EW]] : f32
// CHECK: %[[NB:.+]] = arith.addf %[[NW]], %[[EB]] : f32
// CHECK: linalg.yield %[[NB]] : f32
// CHECK: return %[[Y]] : tensor<2x8x32xf32>
// CHECK-NOT: lamina.
func.func @weight_and_bias(%x: tensor<2x8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %y = lamina.layer_norm "h.0.ln_1" %x weight %w bias %b eps 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// elementwise_affine=False: the same three reductions; the final generic
// reads x, the mean and Σ(x − mean)² only, and multiplies and adds nothing
// after the normalization. eps = 1e-3 in f32.
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[PERROW:.+]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @no_affine
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x16xf32>)
// CHECK-DAG: %[[C:.+]] = arith.constant 1.600000e+01 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: %[[MEAN:.+]] = linalg.generic {indexing_maps = [#[[PERROW]], #[[PERROW]]], iterator_types = ["parallel"]} ins(%[[SUM]] : tensor<4xf32>)
// CHECK: arith.divf %{{.+}}, %[[C]] : f32
// CHECK: %[[SQ:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[MEAN]] : tensor<4x16xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[EPS:.+]] = arith.constant 1.000000e-03 : f32
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]], #[[FULL]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[MEAN]], %[[SQ]] : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: ^bb0(%[[EX:.+]]: f32, %[[EM:.+]]: f32, %[[ESQ:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[VAR:.+]] = arith.divf %[[ESQ]], %[[C]] : f32
// CHECK: %[[SHIFTED:.+]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK: %[[SCALE:.+]] = math.rsqrt %[[SHIFTED]] : f32
// CHECK: %[[D:.+]] = arith.subf %[[EX]], %[[EM]] : f32
// CHECK: %[[N:.+]] = arith.mulf %[[D]], %[[SCALE]] : f32
// CHECK-NEXT: linalg.yield %[[N]] : f32
// CHECK: return %[[Y]] : tensor<4x16xf32>
// CHECK-NOT: lamina.
func.func @no_affine(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = lamina.layer_norm "ln" %x eps 1.0e-03 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// bias=None: the weight multiplies, nothing is added after it.
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[LAST:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @weight_only
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x16xf32>, %[[W:[a-z0-9]+]]: tensor<16xf32>)
// CHECK-COUNT-2: iterator_types = ["parallel", "reduction"]
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]], #[[LAST]], #[[FULL]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %{{.+}}, %{{.+}}, %[[W]] : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: ^bb0(%{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %[[EW:.+]]: f32, %{{.+}}: f32):
// CHECK: math.rsqrt
// CHECK: %[[N:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[NW:.+]] = arith.mulf %[[N]], %[[EW]] : f32
// CHECK-NEXT: linalg.yield %[[NW]] : f32
// CHECK: return %[[Y]] : tensor<4x16xf32>
func.func @weight_only(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = lamina.layer_norm "ln" %x weight %w eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A dynamic row count: the row accumulators take the input's dim 0; C is
// still a constant.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x16xf32>)
// CHECK: %[[DIM:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x16xf32>
// CHECK: arith.constant 1.600000e+01 : f32
// CHECK: tensor.empty(%[[DIM]]) : tensor<?xf32>
// CHECK: tensor.empty(%[[DIM]]) : tensor<?x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]], %{{.+}}, %{{.+}} : tensor<?x16xf32>, tensor<?xf32>, tensor<?xf32>) outs(%{{.*}} : tensor<?x16xf32>)
// CHECK-NOT: lamina.
func.func @dynamic_rows(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %y = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Softmax becomes linalg.softmax along the same dim, into a fresh tensor of
// the input's shape.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[S:[a-z0-9]+]]: tensor<2x4x8x8xf32>, %[[H:[a-z0-9]+]]: tensor<4x16xbf16>)
// CHECK: %[[E0:.+]] = tensor.empty() : tensor<2x4x8x8xf32>
// CHECK: %[[P:.+]] = linalg.softmax dimension(3) ins(%[[S]] : tensor<2x4x8x8xf32>) outs(%[[E0]] : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK: %[[E1:.+]] = tensor.empty() : tensor<2x4x8x8xf32>
// CHECK: %[[Q:.+]] = linalg.softmax dimension(1) ins(%[[P]] : tensor<2x4x8x8xf32>) outs(%[[E1]] : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK: %[[E2:.+]] = tensor.empty() : tensor<4x16xbf16>
// CHECK: %[[R:.+]] = linalg.softmax dimension(0) ins(%[[H]] : tensor<4x16xbf16>) outs(%[[E2]] : tensor<4x16xbf16>) -> tensor<4x16xbf16>
// CHECK: return %[[Q]], %[[R]]
// CHECK-NOT: lamina.softmax
func.func @softmax(%s: tensor<2x4x8x8xf32>, %h: tensor<4x16xbf16>) -> (tensor<2x4x8x8xf32>, tensor<4x16xbf16>) {
  %0 = lamina.softmax %s dim 3 : tensor<2x4x8x8xf32>
  %1 = lamina.softmax "h.0.attn" %0 dim 1 : tensor<2x4x8x8xf32>
  %2 = lamina.softmax %h dim 0 : tensor<4x16xbf16>
  return %1, %2 : tensor<2x4x8x8xf32>, tensor<4x16xbf16>
}

// -----

// A dynamic size reaches the fresh tensor.
// CHECK-LABEL: func.func @softmax_dynamic
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x8xf32>)
// CHECK: %[[DIM:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x8xf32>
// CHECK: %[[E:.+]] = tensor.empty(%[[DIM]]) : tensor<?x8xf32>
// CHECK: linalg.softmax dimension(1) ins(%[[X]] : tensor<?x8xf32>) outs(%[[E]] : tensor<?x8xf32>) -> tensor<?x8xf32>
func.func @softmax_dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = lamina.softmax %x dim 1 : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
