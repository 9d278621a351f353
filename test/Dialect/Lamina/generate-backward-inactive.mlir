// RUN: lamina-opt %s --lamina-generate-backward | FileCheck %s

// A causal mask built inside the program does not depend on any argument:
// no gradient flows into it, so the linalg.generic that builds it needs no
// reverse-mode rule; the scores' gradient goes through the addition and the
// softmax only.
// CHECK-LABEL: func.func @main_backward
// CHECK-SAME: (%[[S:.+]]: tensor<8x8xf32>, %[[P:.+]]: tensor<8x8xf32>, %[[DP:.+]]: tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[DX:.+]] = lamina.softmax_grad %[[P]], %[[DP]] dim 1 : tensor<8x8xf32>
// CHECK-NEXT: return %[[DX]] : tensor<8x8xf32>
func.func @main(%s: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %mask = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %future = arith.cmpi ugt, %j, %i : index
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant -1.0e+30 : f32
    %m = arith.select %future, %ninf, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %masked = arith.addf %s, %mask : tensor<8x8xf32>
  %p = lamina.softmax %masked dim 1 : tensor<8x8xf32>
  return %p : tensor<8x8xf32>
}
