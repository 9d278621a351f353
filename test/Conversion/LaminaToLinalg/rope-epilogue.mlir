// RUN: lamina-opt %s --lamina-select-cpu-strategy --convert-lamina-to-linalg | FileCheck %s
// RUN: lamina-opt %s --convert-lamina-to-linalg | FileCheck %s --check-prefix=UNPACKED

// The rope epilogue of a packed projection: the accumulator [rows, N/16,
// 16]; each element's pair partner from a contraction with the 16 × 16
// exchange matrix (1 where j = n0 xor 1); one epilogue generic reads both
// and the tables by index: the row's position (rows are [batch, seq], the
// tables broadcast over the batch), the feature's pair in its head of 32.
// CHECK-DAG: #[[$PART_ACC:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$PART_P:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$PART_OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @queries
// CHECK-SAME: %[[COS:[a-z0-9]+]]: tensor<1x16x1x16xf32>, %[[SIN:[a-z0-9]+]]: tensor<1x16x1x16xf32>
// CHECK: %[[ACC:.+]] = linalg.generic
// CHECK-SAME: lamina.stage = #lamina<stage matmul>
// Row 0 of the exchange matrix: 0, 1, 0, ...
// CHECK: %[[EXCHANGE:.+]] = arith.constant dense<"0x000000000000803F00000000{{.*}}"> : tensor<16x16xf32>
// CHECK: %[[PARTNERS:.+]] = linalg.generic {indexing_maps = [#[[$PART_ACC]], #[[$PART_P]], #[[$PART_OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[ACC]], %[[EXCHANGE]] : tensor<32x8x16xf32>, tensor<16x16xf32>)
// CHECK-SAME: lamina.stage = #lamina<stage pair_partners>
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[PARTNERS]] : tensor<32x8x16xf32>, tensor<32x8x16xf32>)
// CHECK-SAME: lamina.stage = #lamina<stage epilogue>
// CHECK: ^bb0(%[[A:.+]]: f32, %[[P:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[FEATURE:.+]] = arith.addi
// CHECK: %[[C32:.+]] = arith.constant 32 : index
// CHECK: %[[IN_HEAD:.+]] = arith.remui %[[FEATURE]], %[[C32]]
// CHECK: %[[PAIR:.+]] = arith.divui %[[IN_HEAD]]
// CHECK: %[[ROW:.+]] = linalg.index 0
// CHECK: %[[C16:.+]] = arith.constant 16 : index
// CHECK: %[[SEQ:.+]] = arith.remui %[[ROW]], %[[C16]]
// CHECK: %[[C:.+]] = tensor.extract %[[COS]][%{{.+}}, %[[SEQ]], %{{.+}}, %[[PAIR]]]
// CHECK: %[[S:.+]] = tensor.extract %[[SIN]][%{{.+}}, %[[SEQ]], %{{.+}}, %[[PAIR]]]
// CHECK: %[[NEG:.+]] = arith.negf %[[S]]
// CHECK: %[[SIGNED:.+]] = arith.select %{{.+}}, %[[S]], %[[NEG]]
// CHECK: %[[AC:.+]] = arith.mulf %[[A]], %[[C]]
// CHECK: %[[PS:.+]] = arith.mulf %[[P]], %[[SIGNED]]
// CHECK: arith.addf %[[AC]], %[[PS]]

// Unpacked, the projection is a plain matmul and the rotation lamina.rope's
// own generic over the pairs.
// UNPACKED-LABEL: func.func @queries
// UNPACKED-NOT: pair_partners
// UNPACKED: linalg.matmul
// UNPACKED: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 4, 32]
// UNPACKED: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 16, 4, 16, 2]
// UNPACKED: linalg.generic
// UNPACKED-SAME: ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>, tensor<1x16x1x16xf32>, tensor<1x16x1x16xf32>)
func.func @queries(%x: tensor<2x16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<1x16x1x16xf32>, %sin: tensor<1x16x1x16xf32>) -> tensor<2x16x128xf32> {
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %sin : (tensor<2x16x128xf32>, tensor<128x128xf32>, tensor<1x16x1x16xf32>, tensor<1x16x1x16xf32>) -> tensor<2x16x128xf32>
  return %0 : tensor<2x16x128xf32>
}
