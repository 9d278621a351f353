// RUN: lamina-opt %s | lamina-opt | FileCheck %s
// RUN: lamina-opt %s --mlir-print-op-generic | lamina-opt | FileCheck %s

// Round trip of the lns network ops (LnsNetworkOps.td): the float-function
// ops (exp, log, tanh, sigmoid) on scalars and tensors, the leaky rectifier
// and its gradient, softmax and log_softmax, nll_loss with each reduction
// and an ignore_index, nll_loss_grad, and conv2d with and without a bias.

!f10 = !lns.num<f = 10>
!f23 = !lns.num<f = 23>

// CHECK-LABEL: func.func @float_functions
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x!lns.num<f = 23>>, %[[S:[^:]+]]: !lns.num<f = 10>)
func.func @float_functions(%x: tensor<4x!f23>, %s: !f10) -> (tensor<4x!f23>, !f10) {
  // CHECK: %[[E:.+]] = lns.exp %[[X]] : tensor<4x!lns.num<f = 23>>
  %0 = lns.exp %x : tensor<4x!f23>
  // CHECK: %[[L:.+]] = lns.log %[[E]] : tensor<4x!lns.num<f = 23>>
  %1 = lns.log %0 : tensor<4x!f23>
  // CHECK: %[[T:.+]] = lns.tanh %[[L]] : tensor<4x!lns.num<f = 23>>
  %2 = lns.tanh %1 : tensor<4x!f23>
  // CHECK: %[[G:.+]] = lns.sigmoid %[[T]] : tensor<4x!lns.num<f = 23>>
  %3 = lns.sigmoid %2 : tensor<4x!f23>
  // CHECK: %[[SE:.+]] = lns.exp %[[S]] : !lns.num<f = 10>
  %4 = lns.exp %s : !f10
  // CHECK: %[[SL:.+]] = lns.log %[[SE]] : !lns.num<f = 10>
  %5 = lns.log %4 : !f10
  // CHECK: %[[ST:.+]] = lns.tanh %[[SL]] : !lns.num<f = 10>
  %6 = lns.tanh %5 : !f10
  // CHECK: %[[SG:.+]] = lns.sigmoid %[[ST]] : !lns.num<f = 10>
  %7 = lns.sigmoid %6 : !f10
  // CHECK: return %[[G]], %[[SG]]
  return %3, %7 : tensor<4x!f23>, !f10
}

// CHECK-LABEL: func.func @leaky
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x!lns.num<f = 10>>, %[[SL:[^:]+]]: tensor<8x!lns.num<f = 10>>, %[[G:[^:]+]]: tensor<8x!lns.num<f = 10>>, %[[A:[^:]+]]: !lns.num<f = 10>, %[[B:[^:]+]]: !lns.num<f = 10>)
func.func @leaky(%x: tensor<8x!f10>, %s: tensor<8x!f10>, %g: tensor<8x!f10>, %a: !f10, %b: !f10) -> (tensor<8x!f10>, tensor<8x!f10>, !f10) {
  // CHECK: lns.leaky_relu %[[X]], %[[SL]] : tensor<8x!lns.num<f = 10>>
  %0 = lns.leaky_relu %x, %s : tensor<8x!f10>
  // CHECK: lns.leaky_relu_grad %[[G]], %[[X]], %[[SL]] : tensor<8x!lns.num<f = 10>>
  %1 = lns.leaky_relu_grad %g, %x, %s : tensor<8x!f10>
  // CHECK: lns.leaky_relu %[[A]], %[[B]] : !lns.num<f = 10>
  %2 = lns.leaky_relu %a, %b : !f10
  return %0, %1, %2 : tensor<8x!f10>, tensor<8x!f10>, !f10
}

// CHECK-LABEL: func.func @normalizations
func.func @normalizations(%x: tensor<4x10x!f23>, %y: tensor<2x3x5x!f23>) -> (tensor<4x10x!f23>, tensor<4x10x!f23>, tensor<2x3x5x!f23>) {
  // CHECK: lns.softmax %{{.+}} dim 1 : tensor<4x10x!lns.num<f = 23>>
  %0 = lns.softmax %x dim 1 : tensor<4x10x!f23>
  // CHECK: lns.log_softmax %{{.+}} dim 0 : tensor<4x10x!lns.num<f = 23>>
  %1 = lns.log_softmax %x dim 0 : tensor<4x10x!f23>
  // CHECK: lns.softmax %{{.+}} dim 2 : tensor<2x3x5x!lns.num<f = 23>>
  %2 = lns.softmax %y dim 2 : tensor<2x3x5x!f23>
  return %0, %1, %2 : tensor<4x10x!f23>, tensor<4x10x!f23>, tensor<2x3x5x!f23>
}

// The default ignore_index (-100) is not printed; another value is.
// CHECK-LABEL: func.func @nll_loss
func.func @nll_loss(%x: tensor<4x10x!f23>, %t: tensor<4xi64>) -> (tensor<!f23>, tensor<!f23>, tensor<4x!f23>, tensor<!f23>, tensor<!f23>) {
  // CHECK: lns.nll_loss %{{.+}}, %{{.+}} reduction mean : tensor<4x10x!lns.num<f = 23>>, tensor<4xi64> -> tensor<!lns.num<f = 23>>
  %0 = lns.nll_loss %x, %t reduction mean : tensor<4x10x!f23>, tensor<4xi64> -> tensor<!f23>
  // CHECK: lns.nll_loss %{{.+}}, %{{.+}} reduction sum : tensor<4x10x!lns.num<f = 23>>, tensor<4xi64> -> tensor<!lns.num<f = 23>>
  %1 = lns.nll_loss %x, %t reduction sum : tensor<4x10x!f23>, tensor<4xi64> -> tensor<!f23>
  // CHECK: lns.nll_loss %{{.+}}, %{{.+}} reduction none : tensor<4x10x!lns.num<f = 23>>, tensor<4xi64> -> tensor<4x!lns.num<f = 23>>
  %2 = lns.nll_loss %x, %t reduction none : tensor<4x10x!f23>, tensor<4xi64> -> tensor<4x!f23>
  // CHECK: lns.nll_loss %{{.+}}, %{{.+}} reduction mean {ignore_index = 3 : i64} : tensor<4x10x!lns.num<f = 23>>, tensor<4xi64> -> tensor<!lns.num<f = 23>>
  %3 = lns.nll_loss %x, %t reduction mean {ignore_index = 3 : i64} : tensor<4x10x!f23>, tensor<4xi64> -> tensor<!f23>
  // CHECK: lns.nll_loss %{{.+}}, %{{.+}} reduction sum : tensor<4x10x!lns.num<f = 23>>
  // CHECK-NOT: ignore_index
  %4 = lns.nll_loss %x, %t reduction sum {ignore_index = -100 : i64} : tensor<4x10x!f23>, tensor<4xi64> -> tensor<!f23>
  return %0, %1, %2, %3, %4 : tensor<!f23>, tensor<!f23>, tensor<4x!f23>, tensor<!f23>, tensor<!f23>
}

// CHECK-LABEL: func.func @nll_loss_grad
func.func @nll_loss_grad(%g: tensor<!f23>, %gs: tensor<4x!f23>, %t: tensor<4xi64>) -> (tensor<4x10x!f23>, tensor<4x10x!f23>, tensor<4x10x!f23>) {
  // CHECK: lns.nll_loss_grad %{{.+}}, %{{.+}} reduction mean {ignore_index = 3 : i64} : tensor<!lns.num<f = 23>>, tensor<4xi64> -> tensor<4x10x!lns.num<f = 23>>
  %0 = lns.nll_loss_grad %g, %t reduction mean {ignore_index = 3 : i64} : tensor<!f23>, tensor<4xi64> -> tensor<4x10x!f23>
  // CHECK: lns.nll_loss_grad %{{.+}}, %{{.+}} reduction sum : tensor<!lns.num<f = 23>>, tensor<4xi64> -> tensor<4x10x!lns.num<f = 23>>
  %1 = lns.nll_loss_grad %g, %t reduction sum : tensor<!f23>, tensor<4xi64> -> tensor<4x10x!f23>
  // CHECK: lns.nll_loss_grad %{{.+}}, %{{.+}} reduction none : tensor<4x!lns.num<f = 23>>, tensor<4xi64> -> tensor<4x10x!lns.num<f = 23>>
  %2 = lns.nll_loss_grad %gs, %t reduction none : tensor<4x!f23>, tensor<4xi64> -> tensor<4x10x!f23>
  return %0, %1, %2 : tensor<4x10x!f23>, tensor<4x10x!f23>, tensor<4x10x!f23>
}

// Output sizes: (H + pad_low + pad_high − (dilation·(K − 1) + 1)) / stride + 1.
//   %0: (8 − 3) / 1 + 1 = 6 in both dimensions.
//   %1: H (8 + 1 + 0 − 3) / 2 + 1 = 4, W (8 + 1 + 1 − 3) / 1 + 1 = 8.
//   %2: reach 2·2 + 1 = 5: (8 − 5) / 1 + 1 = 4, (8 + 2 − 5) / 3 + 1 = 2.
// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x1x8x8x!lns.num<f = 23>>, %[[W:[^:]+]]: tensor<4x1x3x3x!lns.num<f = 23>>, %[[B:[^:]+]]: tensor<4x!lns.num<f = 23>>)
func.func @conv2d(%x: tensor<2x1x8x8x!f23>, %w: tensor<4x1x3x3x!f23>, %b: tensor<4x!f23>) -> (tensor<2x4x6x6x!f23>, tensor<2x4x4x8x!f23>, tensor<2x4x4x2x!f23>) {
  // CHECK: lns.conv2d %[[X]], %[[W]] bias %[[B]] strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!lns.num<f = 23>>, tensor<4x1x3x3x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>> -> tensor<2x4x6x6x!lns.num<f = 23>>
  %0 = lns.conv2d %x, %w bias %b strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!f23>, tensor<4x1x3x3x!f23>, tensor<4x!f23> -> tensor<2x4x6x6x!f23>
  // CHECK: lns.conv2d %[[X]], %[[W]] strides [2, 1] dilations [1, 1] pad_low [1, 1] pad_high [0, 1] : tensor<2x1x8x8x!lns.num<f = 23>>, tensor<4x1x3x3x!lns.num<f = 23>> -> tensor<2x4x4x8x!lns.num<f = 23>>
  %1 = lns.conv2d %x, %w strides [2, 1] dilations [1, 1] pad_low [1, 1] pad_high [0, 1] : tensor<2x1x8x8x!f23>, tensor<4x1x3x3x!f23> -> tensor<2x4x4x8x!f23>
  // CHECK: lns.conv2d %[[X]], %[[W]] bias %[[B]] strides [1, 3] dilations [2, 2] pad_low [0, 1] pad_high [0, 1] : tensor<2x1x8x8x!lns.num<f = 23>>, tensor<4x1x3x3x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>> -> tensor<2x4x4x2x!lns.num<f = 23>>
  %2 = lns.conv2d %x, %w bias %b strides [1, 3] dilations [2, 2] pad_low [0, 1] pad_high [0, 1] : tensor<2x1x8x8x!f23>, tensor<4x1x3x3x!f23>, tensor<4x!f23> -> tensor<2x4x4x2x!f23>
  return %0, %1, %2 : tensor<2x4x6x6x!f23>, tensor<2x4x4x8x!f23>, tensor<2x4x4x2x!f23>
}
