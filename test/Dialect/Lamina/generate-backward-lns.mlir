// RUN: lamina-opt %s --lamina-generate-backward=function=loss -split-input-file | FileCheck %s

// An LNS linear layer, a rectifier and a squared-error loss: the backward
// follows the LNS training spec, in lns ops and in the forward's base.
// loss = sum(powi(relu(x·Wᵀ + b) − t, 2)) / enc(8):
//   gs = div(g, n)  (div rule)    gsq = gs broadcast (sum rule)
//   ge = mul(gsq, mul(enc(2), powi(e, 1)))  (powi rule)
//   gy = ge, gt = neg(ge)  (sub rule)       gh = relu_grad(gy, y)
//   gx = gh·W over n;  gW = ghᵀ·x over rows;  gb = Σ rows
!f = !lns.num<f = 10>

// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x!lns.num<f = 10>>, %[[W:[^:]+]]: tensor<3x4x!lns.num<f = 10>>, %[[B:[^:]+]]: tensor<3x!lns.num<f = 10>>, %[[T:[^:]+]]: tensor<2x3x!lns.num<f = 10>>,
// CHECK-SAME: %[[S:[^:]+]]: tensor<!lns.num<f = 10>>, %[[N:[^:]+]]: tensor<!lns.num<f = 10>>, %[[E:[^:]+]]: tensor<2x3x!lns.num<f = 10>>, %[[Y:[^:]+]]: tensor<2x3x!lns.num<f = 10>>, %[[G:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[GS:.+]] = lns.div %[[G]], %[[N]]
// The gradient of the constant divisor, built by the div rule and left
// unused, is not kept.
// CHECK-NOT: lns.div %[[S]]
// CHECK: %[[GSQ:.+]] = linalg.broadcast ins(%[[GS]] : tensor<!lns.num<f = 10>>) outs(%{{.+}} : tensor<2x3x!lns.num<f = 10>>) dimensions = [0, 1]
// CHECK: %[[E1:.+]] = lns.powi %[[E]], 1
// CHECK: %[[TWO:.+]] = lns.constant dense<2048> : tensor<2x3xi64>
// CHECK: %[[SLOPE:.+]] = lns.mul %[[TWO]], %[[E1]]
// CHECK: %[[GE:.+]] = lns.mul %[[GSQ]], %[[SLOPE]]
// CHECK: %[[GT:.+]] = lns.neg %[[GE]]
// CHECK: %[[GH:.+]] = lns.relu_grad %[[GE]], %[[Y]]
// The products are lns.linear (x·Wᵀ) on transposed operands: the same
// sequential sums as lns.matmul, through the layer kernels.
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<3x4x!lns.num<f = 10>>) {{.*}} permutation = [1, 0]
// CHECK: %[[GX:.+]] = lns.linear %[[GH]], %[[WT]] : tensor<2x3x!lns.num<f = 10>>, tensor<4x3x!lns.num<f = 10>> -> tensor<2x4x!lns.num<f = 10>>
// CHECK: %[[GHT:.+]] = linalg.transpose ins(%[[GH]] : tensor<2x3x!lns.num<f = 10>>) {{.*}} permutation = [1, 0]
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[X]] : tensor<2x4x!lns.num<f = 10>>) {{.*}} permutation = [1, 0]
// CHECK: %[[GW:.+]] = lns.linear %[[GHT]], %[[XT]] : tensor<3x2x!lns.num<f = 10>>, tensor<4x2x!lns.num<f = 10>> -> tensor<3x4x!lns.num<f = 10>>
// CHECK: %[[GB:.+]] = lns.sum %[[GH]] dims [0] : tensor<2x3x!lns.num<f = 10>> -> tensor<3x!lns.num<f = 10>>
// CHECK: return %[[GX]], %[[GW]], %[[GB]], %[[GT]]
func.func @loss(%x: tensor<2x4x!f>, %w: tensor<3x4x!f>, %b: tensor<3x!f>, %t: tensor<2x3x!f>) -> tensor<!f> {
  %h = lns.linear %x, %w bias %b : tensor<2x4x!f>, tensor<3x4x!f>, tensor<3x!f> -> tensor<2x3x!f>
  %y = lns.relu %h : tensor<2x3x!f>
  %e = lns.sub %y, %t : tensor<2x3x!f>, tensor<2x3x!f>
  %sq = lns.powi %e, 2 : tensor<2x3x!f>
  %s = lns.sum %sq dims [0, 1] : tensor<2x3x!f> -> tensor<!f>
  %n = lns.constant dense<6144> : tensor<i64> -> tensor<!f>
  %l = lns.div %s, %n : tensor<!f>, tensor<!f>
  return %l : tensor<!f>
}

// -----

// Mixed bases: the weight (f = 12) is converted to the input's base in the
// forward; its gradient, computed in f = 10, goes back to f = 12, and so
// does the gradient of the right operand of a mul.
!f = !lns.num<f = 10>

// CHECK-LABEL: func.func @loss_backward
// CHECK: %[[WX:.+]] = lns.change_base %{{.+}} : tensor<3x4x!lns.num<f = 12>> -> tensor<3x4x!lns.num<f = 10>>
// CHECK: %[[WXT:.+]] = linalg.transpose ins(%[[WX]]
// CHECK: lns.linear %{{.+}}, %[[WXT]]
// CHECK: %[[GW:.+]] = lns.linear
// CHECK: %[[GW12:.+]] = lns.change_base %[[GW]] : tensor<3x4x!lns.num<f = 10>> -> tensor<3x4x!lns.num<f = 12>>
// CHECK: return %{{.+}}, %[[GW12]] : tensor<2x4x!lns.num<f = 10>>, tensor<3x4x!lns.num<f = 12>>
func.func @loss(%x: tensor<2x4x!f>, %w: tensor<3x4x!lns.num<f = 12>>) -> tensor<!f> {
  %h = lns.linear %x, %w : tensor<2x4x!f>, tensor<3x4x!lns.num<f = 12>> -> tensor<2x3x!f>
  %s = lns.sum %h dims [0, 1] : tensor<2x3x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// A float program with a layer replaced by its LNS variant (replace "lns"):
// the float cotangent is encoded in the layer's base (decode's rule), the
// layer's gradients are LNS codes by the same products and sequential row
// sum as lns.linear's rule, and the input's is decoded (encode's rule).
//   dyl = encode(dy);  db = Σ rows dyl;  dxl = dyl·W;  dW = dylᵀ·xl
//   dx = decode(dxl)
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<4x8xf32>, %[[W:[^:]+]]: tensor<16x8x!lns.num<f = 10>>, %{{[^:]+}}: tensor<16x!lns.num<f = 10>>, %[[XL:[^:]+]]: tensor<4x8x!lns.num<f = 10>>, %[[DY:[^:]+]]: tensor<4x16xf32>)
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 10>>)
// CHECK: %[[DYL:.+]] = lns.encode %[[DY]] : tensor<4x16xf32> -> tensor<4x16x!lns.num<f = 10>>
// CHECK: %[[DB:.+]] = lns.sum %[[DYL]] dims [0] : tensor<4x16x!lns.num<f = 10>> -> tensor<16x!lns.num<f = 10>>
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : {{.*}} permutation = [1, 0]
// CHECK: %[[DXL:.+]] = lamina.matmul "fc" %[[DYL]], %[[WT]] : (tensor<4x16x!lns.num<f = 10>>, tensor<8x16x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>>
// CHECK: %[[DYT:.+]] = linalg.transpose ins(%[[DYL]] : {{.*}} permutation = [1, 0]
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[XL]] : {{.*}} permutation = [1, 0]
// CHECK: %[[DW:.+]] = lamina.matmul "fc" %[[DYT]], %[[XT]] : (tensor<16x4x!lns.num<f = 10>>, tensor<8x4x!lns.num<f = 10>>) -> tensor<16x8x!lns.num<f = 10>>
// CHECK: %[[DX:.+]] = lns.decode %[[DXL]] : tensor<4x8x!lns.num<f = 10>> -> tensor<4x8xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @loss(%x: tensor<4x8xf32>, %w: tensor<16x8x!lns.num<f = 10>>, %b: tensor<16x!lns.num<f = 10>>) -> tensor<4x16xf32> {
  %xl = lns.encode %x : tensor<4x8xf32> -> tensor<4x8x!lns.num<f = 10>>
  %0 = lamina.linear "fc" %xl, %w bias %b : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  %y = lns.decode %0 : tensor<4x16x!lns.num<f = 10>> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
