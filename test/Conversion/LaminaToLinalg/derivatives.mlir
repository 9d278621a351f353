// RUN: lamina-opt %s --convert-lamina-to-linalg --split-input-file | FileCheck %s

// activation_grad is one element-wise generic over (x, dy): dx = dy·act'(x).
// gelu_tanh'(x) = 0.5·x·(1 − t²)·(√(2/π) + 0.1070322243·x²) + 0.5·(1 + t),
// t = tanh(√(2/π)·(x + 0.044715·x³)); the constants print as f32
// (√(2/π) = 0.7978845608… → 0.797884583, 0.1070322243 → 0.107032225;
// 0.1070322243 = 3·0.044715·√(2/π)).
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x16xf32>, %[[DY:[a-z0-9]+]]: tensor<4x16xf32>)
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[DY]] : tensor<4x16xf32>, tensor<4x16xf32>) outs(%{{.+}} : tensor<4x16xf32>)
// CHECK: ^bb0(%[[E:[a-z_0-9]+]]: f32, %[[G:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[X2:.+]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK: %[[C044:.+]] = arith.constant 4.471500e-02 : f32
// CHECK: %[[X3:.+]] = arith.mulf %[[E]], %[[X2]] : f32
// CHECK: %[[CX3:.+]] = arith.mulf %[[C044]], %[[X3]] : f32
// CHECK: %[[IN:.+]] = arith.addf %[[E]], %[[CX3]] : f32
// CHECK: %[[S2PI:.+]] = arith.constant 0.797884583 : f32
// CHECK: %[[U:.+]] = arith.mulf %[[S2PI]], %[[IN]] : f32
// CHECK: %[[T:.+]] = math.tanh %[[U]] : f32
// CHECK: %[[T2:.+]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK: %[[OMT2:.+]] = arith.subf %{{.+}}, %[[T2]] : f32
// CHECK: %[[C107:.+]] = arith.constant 0.107032225 : f32
// CHECK: %[[CX2:.+]] = arith.mulf %[[C107]], %[[X2]] : f32
// CHECK: %[[SLOPE:.+]] = arith.addf %{{.+}}, %[[CX2]] : f32
// CHECK: %[[HALF_X:.+]] = arith.mulf %{{.+}}, %[[E]] : f32
// CHECK: %[[PROD:.+]] = arith.mulf %[[OMT2]], %[[SLOPE]] : f32
// CHECK: %[[FIRST:.+]] = arith.mulf %[[HALF_X]], %[[PROD]] : f32
// CHECK: %[[OPT:.+]] = arith.addf %{{.+}}, %[[T]] : f32
// CHECK: %[[SECOND:.+]] = arith.mulf %{{.+}}, %[[OPT]] : f32
// CHECK: %[[D:.+]] = arith.addf %[[FIRST]], %[[SECOND]] : f32
// CHECK: %[[OUT:.+]] = arith.mulf %[[G]], %[[D]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
// CHECK: return %[[R]]
// CHECK-NOT: lamina.activation_grad
func.func @gelu_tanh(%x: tensor<4x16xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.activation_grad gelu_tanh %x, %dy : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// gelu_erf'(x) = Φ(x) + x·φ(x) = 0.5·(1 + erf(x/√2)) + x·exp(−x²/2)/√(2π).
// CHECK-LABEL: func.func @gelu_erf
// CHECK: linalg.generic
// CHECK: ^bb0(%[[E:[a-z_0-9]+]]: f32, %[[G:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[RS2:.+]] = arith.constant 0.707106769 : f32
// CHECK: %[[XS:.+]] = arith.mulf %[[RS2]], %[[E]] : f32
// CHECK: %[[ERF:.+]] = math.erf %[[XS]] : f32
// CHECK: %[[OPE:.+]] = arith.addf %{{.+}}, %[[ERF]] : f32
// CHECK: %[[CDF:.+]] = arith.mulf %{{.+}}, %[[OPE]] : f32
// CHECK: %[[RS2PI:.+]] = arith.constant 0.398942292 : f32
// CHECK: %[[MHALF:.+]] = arith.constant -5.000000e-01 : f32
// CHECK: %[[X2:.+]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK: %[[ARG:.+]] = arith.mulf %[[MHALF]], %[[X2]] : f32
// CHECK: %[[EXP:.+]] = math.exp %[[ARG]] : f32
// CHECK: %[[PDF:.+]] = arith.mulf %[[RS2PI]], %[[EXP]] : f32
// CHECK: %[[XPDF:.+]] = arith.mulf %[[E]], %[[PDF]] : f32
// CHECK: %[[D:.+]] = arith.addf %[[CDF]], %[[XPDF]] : f32
// CHECK: %[[OUT:.+]] = arith.mulf %[[G]], %[[D]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
func.func @gelu_erf(%x: tensor<4x16xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.activation_grad gelu_erf %x, %dy : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// relu'(x) = [x > 0]: dy where x > 0 (ordered: NaN gives 0), else 0.
// CHECK-LABEL: func.func @relu
// CHECK: linalg.generic
// CHECK: ^bb0(%[[E:[a-z_0-9]+]]: f32, %[[G:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[POS:.+]] = arith.cmpf ogt, %[[E]], %[[Z]] : f32
// CHECK: %[[Z2:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[OUT:.+]] = arith.select %[[POS]], %[[G]], %[[Z2]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
// CHECK-NOT: math.
func.func @relu(%x: tensor<4x16xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.activation_grad relu %x, %dy : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// silu'(x) = σ(x)·(1 + x·(1 − σ(x))), σ(x) = 1 / (1 + exp(−x)).
// CHECK-LABEL: func.func @silu
// CHECK: linalg.generic
// CHECK: ^bb0(%[[E:[a-z_0-9]+]]: f32, %[[G:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[NEG:.+]] = arith.negf %[[E]] : f32
// CHECK: %[[EXP:.+]] = math.exp %[[NEG]] : f32
// CHECK: %[[DEN:.+]] = arith.addf %[[ONE]], %[[EXP]] : f32
// CHECK: %[[S:.+]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK: %[[OMS:.+]] = arith.subf %{{.+}}, %[[S]] : f32
// CHECK: %[[XOMS:.+]] = arith.mulf %[[E]], %[[OMS]] : f32
// CHECK: %[[SUM:.+]] = arith.addf %{{.+}}, %[[XOMS]] : f32
// CHECK: %[[D:.+]] = arith.mulf %[[S]], %[[SUM]] : f32
// CHECK: %[[OUT:.+]] = arith.mulf %[[G]], %[[D]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
func.func @silu(%x: tensor<4x16xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.activation_grad silu %x, %dy : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// sigmoid'(x) = σ(x)·(1 − σ(x)).
// CHECK-LABEL: func.func @sigmoid
// CHECK: linalg.generic
// CHECK: ^bb0(%[[E:[a-z_0-9]+]]: f32, %[[G:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[NEG:.+]] = arith.negf %[[E]] : f32
// CHECK: %[[EXP:.+]] = math.exp %[[NEG]] : f32
// CHECK: %[[DEN:.+]] = arith.addf %{{.+}}, %[[EXP]] : f32
// CHECK: %[[S:.+]] = arith.divf %{{.+}}, %[[DEN]] : f32
// CHECK: %[[OMS:.+]] = arith.subf %{{.+}}, %[[S]] : f32
// CHECK: %[[D:.+]] = arith.mulf %[[S]], %[[OMS]] : f32
// CHECK: %[[OUT:.+]] = arith.mulf %[[G]], %[[D]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
func.func @sigmoid(%x: tensor<4x16xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.activation_grad sigmoid %x, %dy : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// softmax_grad along dim 1 of [2, 4, 8]: s = Σ_dim y·dy (a reduction that
// drops dim 1, into zeros), then dx = y·(dy − s) element-wise with s
// broadcast along dim 1.
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[NODIM:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[NODIM]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[Y]], %[[DY]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%[[ACC]] : tensor<2x8xf32>)
// CHECK: ^bb0(%[[SY:[a-z_0-9]+]]: f32, %[[SD:[a-z_0-9]+]]: f32, %[[SACC:[a-z_0-9]+]]: f32):
// CHECK: %[[YD:.+]] = arith.mulf %[[SY]], %[[SD]] : f32
// CHECK: %[[NEXT:.+]] = arith.addf %[[SACC]], %[[YD]] : f32
// CHECK: linalg.yield %[[NEXT]] : f32
// CHECK: %[[DX:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[NODIM]], #[[FULL]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[Y]], %[[DY]], %[[S]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8xf32>) outs(%{{.+}} : tensor<2x4x8xf32>)
// CHECK: ^bb0(%[[EY:[a-z_0-9]+]]: f32, %[[ED:[a-z_0-9]+]]: f32, %[[ES:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[SHIFT:.+]] = arith.subf %[[ED]], %[[ES]] : f32
// CHECK: %[[R:.+]] = arith.mulf %[[EY]], %[[SHIFT]] : f32
// CHECK: linalg.yield %[[R]] : f32
// CHECK: return %[[DX]]
func.func @softmax_grad(%y: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = lamina.softmax_grad %y, %dy dim 1 : tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// layer_norm_grad over the last dim (C = 8) of [2, 4, 8], with a weight:
// the forward's statistics again (Σx, mean = Σx/C, q = Σ(x − mean)²), then
// with r = rsqrt(q/C + eps), x̂ = (x − mean)·r and g = dy·w:
//   per row: Σg and Σg·x̂ (two generics, reductions on d2);
//   dx = r·((g − Σg/C) − x̂·(Σg·x̂)/C)                       (element-wise);
//   dweight = Σ_rows dy·x̂, dbias = Σ_rows dy  (one generic, reductions on d0, d1).
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[FEAT:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[W:[a-z0-9]+]]: tensor<8xf32>)
// Σx and mean.
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<2x4x8xf32>)
// CHECK: %[[MEAN:.+]] = linalg.generic {{.+}} ins(%[[SUM]] : tensor<2x4xf32>)
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: arith.divf
// q = Σ(x − mean)².
// CHECK: %[[Q:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[MEAN]] : tensor<2x4x8xf32>, tensor<2x4xf32>)
// CHECK: %[[QD:.+]] = arith.subf
// CHECK: arith.mulf %[[QD]], %[[QD]] : f32
// Σg per row, then Σg·x̂ per row (two generics of one result each: a row
// reduction each, which the CPU schedule vectorizes).
// CHECK: %[[SUMG:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[ROW]], #[[ROW]], #[[FEAT]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[DY]], %[[MEAN]], %[[Q]], %[[W]] : {{.+}}) outs({{.+}} : tensor<2x4xf32>)
// CHECK: ^bb0(%{{[a-z_0-9]+}}: f32, %[[GDY:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32, %{{[a-z_0-9]+}}: f32, %[[GW:[a-z_0-9]+]]: f32, %[[ACC1:[a-z_0-9]+]]: f32):
// CHECK: %[[G:.+]] = arith.mulf %[[GDY]], %[[GW]] : f32
// CHECK: %[[SG:.+]] = arith.addf %[[ACC1]], %[[G]] : f32
// CHECK: linalg.yield %[[SG]] : f32
// CHECK: %[[SUMGX:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[ROW]], #[[ROW]], #[[FEAT]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[DY]], %[[MEAN]], %[[Q]], %[[W]] : {{.+}}) outs({{.+}} : tensor<2x4xf32>)
// CHECK: ^bb0(%[[AX:[a-z_0-9]+]]: f32, %[[ADY:[a-z_0-9]+]]: f32, %[[AM:[a-z_0-9]+]]: f32, %[[AQ:[a-z_0-9]+]]: f32, %[[AW:[a-z_0-9]+]]: f32, %[[ACC2:[a-z_0-9]+]]: f32):
// CHECK: %[[AG:.+]] = arith.mulf %[[ADY]], %[[AW]] : f32
// CHECK: %[[AC:.+]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[AVAR:.+]] = arith.divf %[[AQ]], %[[AC]] : f32
// CHECK: %[[AEPS:.+]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[ASH:.+]] = arith.addf %[[AVAR]], %[[AEPS]] : f32
// CHECK: %[[AR:.+]] = math.rsqrt %[[ASH]] : f32
// CHECK: %[[ACEN:.+]] = arith.subf %[[AX]], %[[AM]] : f32
// CHECK: %[[AXH:.+]] = arith.mulf %[[ACEN]], %[[AR]] : f32
// CHECK: %[[GX:.+]] = arith.mulf %[[AG]], %[[AXH]] : f32
// CHECK: %[[SGX:.+]] = arith.addf %[[ACC2]], %[[GX]] : f32
// CHECK: linalg.yield %[[SGX]] : f32
// dx, element-wise.
// CHECK: %[[DX:.+]] = linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[ROW]], #[[ROW]], #[[ROW]], #[[ROW]], #[[FEAT]], #[[FULL]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[DY]], %[[MEAN]], %[[Q]], %[[SUMG]], %[[SUMGX]], %[[W]] : {{.+}}) outs(%{{.+}} : tensor<2x4x8xf32>)
// CHECK: ^bb0(%[[BX:[a-z_0-9]+]]: f32, %[[BDY:[a-z_0-9]+]]: f32, %[[BM:[a-z_0-9]+]]: f32, %[[BQ:[a-z_0-9]+]]: f32, %[[BSG:[a-z_0-9]+]]: f32, %[[BSGX:[a-z_0-9]+]]: f32, %[[BW:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[BR:.+]] = math.rsqrt
// CHECK: %[[BCEN:.+]] = arith.subf %[[BX]], %[[BM]] : f32
// CHECK: %[[BXH:.+]] = arith.mulf %[[BCEN]], %[[BR]] : f32
// CHECK: %[[BG:.+]] = arith.mulf %[[BDY]], %[[BW]] : f32
// CHECK: %[[BC:.+]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[MG:.+]] = arith.divf %[[BSG]], %[[BC]] : f32
// CHECK: %[[MGX:.+]] = arith.divf %[[BSGX]], %[[BC]] : f32
// CHECK: %[[G1:.+]] = arith.subf %[[BG]], %[[MG]] : f32
// CHECK: %[[XM:.+]] = arith.mulf %[[BXH]], %[[MGX]] : f32
// CHECK: %[[CEN:.+]] = arith.subf %[[G1]], %[[XM]] : f32
// CHECK: %[[BDX:.+]] = arith.mulf %[[BR]], %[[CEN]] : f32
// CHECK: linalg.yield %[[BDX]] : f32
// dweight and dbias: reductions over the rows, parallel over the features.
// CHECK: %[[COLS:.+]]:2 = linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[ROW]], #[[ROW]], #[[FEAT]], #[[FEAT]]], iterator_types = ["reduction", "reduction", "parallel"]} ins(%[[X]], %[[DY]], %[[MEAN]], %[[Q]] : {{.+}}) outs({{.+}} : tensor<8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[CX:[a-z_0-9]+]]: f32, %[[CDY:[a-z_0-9]+]]: f32, %[[CM:[a-z_0-9]+]]: f32, %[[CQ:[a-z_0-9]+]]: f32, %[[CW:[a-z_0-9]+]]: f32, %[[CB:[a-z_0-9]+]]: f32):
// CHECK: %[[CR:.+]] = math.rsqrt
// CHECK: %[[CCEN:.+]] = arith.subf %[[CX]], %[[CM]] : f32
// CHECK: %[[CXH:.+]] = arith.mulf %[[CCEN]], %[[CR]] : f32
// CHECK: %[[DYXH:.+]] = arith.mulf %[[CDY]], %[[CXH]] : f32
// CHECK: %[[DWN:.+]] = arith.addf %[[CW]], %[[DYXH]] : f32
// CHECK: %[[DBN:.+]] = arith.addf %[[CB]], %[[CDY]] : f32
// CHECK: linalg.yield %[[DWN]], %[[DBN]] : f32, f32
// CHECK: return %[[DX]], %[[COLS]]#0, %[[COLS]]#1 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
func.func @layer_norm_grad(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = lamina.layer_norm_grad %x, %dy weight %w eps 1.0e-05 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %dw, %db : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Without a weight, g = dy: no feature-indexed operand in the row sums.
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @layer_norm_grad_no_weight
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[FULL]], #[[FULL]], #[[ROW]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[DY]], %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: ^bb0(%{{[a-z_0-9]+}}: f32, %[[ADY:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32, %{{[a-z_0-9]+}}: f32, %[[ACC1:[a-z_0-9]+]]: f32):
// CHECK-NEXT: arith.addf %[[ACC1]], %[[ADY]] : f32
func.func @layer_norm_grad_no_weight(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %dx, %dw, %db = lamina.layer_norm_grad %x, %dy eps 1.0e-05 : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx : tensor<4x8xf32>
}
