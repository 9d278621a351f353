// RUN: lamina-opt %s --lamina-decompose-aggregates | FileCheck %s

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // max, exp(x - max), sum, divide: all plain linalg ops.
  // CHECK-NOT: linalg.softmax
  // CHECK: arith.maxnumf
  // CHECK: math.exp
  // CHECK: arith.addf
  // CHECK: arith.divf
  %e = tensor.empty() : tensor<2x16xf32>
  %0 = linalg.softmax dimension(1) ins(%x : tensor<2x16xf32>) outs(%e : tensor<2x16xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
