// RUN: lamina-opt %s --lamina-generate-backward="function=main constants=0" | FileCheck %s
// RUN: lamina-opt %s --lamina-generate-backward="function=main constants=0,1,2" | FileCheck %s --check-prefix=FROZEN

// The input x is held constant (it does not require a gradient): the
// backward returns the gradients of W and b only, and the product that
// only x's gradient needs, dx = dy·W, is not computed.
//   dW = dyᵀ·x    db = Σ rows of dy
// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 0, gradients = [1, 2]>}
// CHECK-LABEL: func.func @main_backward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[W:[^:]+]]: tensor<16x8xf32>, %[[B:[^:]+]]: tensor<16xf32>, %[[DY:[^:]+]]: tensor<4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>)
// CHECK: %[[DB:.+]] = linalg.reduce ins(%[[DY]] : tensor<4x16xf32>)
// CHECK-NOT: linalg.transpose ins(%[[W]]
// CHECK: %[[DYT:.+]] = linalg.transpose ins(%[[DY]] : tensor<4x16xf32>)
// CHECK-NOT: linalg.transpose ins(%[[W]]
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[X]] : tensor<4x8xf32>)
// CHECK-NEXT: %[[DW:.+]] = lamina.matmul "fc" %[[DYT]], %[[XT]] : (tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<16x8xf32>
// CHECK-NEXT: return %[[DW]], %[[DB]] : tensor<16x8xf32>, tensor<16xf32>
// Every argument constant: an empty backward.
// FROZEN: gradients = []>
// FROZEN-LABEL: func.func @main_backward
// FROZEN-SAME: %{{[^:]+}}: tensor<4x16xf32>) {
// FROZEN-NEXT: return
// FROZEN-NEXT: }
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
