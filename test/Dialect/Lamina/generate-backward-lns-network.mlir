// RUN: lamina-opt %s --lamina-generate-backward=function=loss -split-input-file | FileCheck %s

// The reverse-mode rules of the lns network ops (LnsNetworkRules.cpp), one
// op a case, each under an lns.sum whose gradient is the broadcast upstream
// gradient g. c1 is the code 0 (1.0), Z the code -9007199254740991.
//   exp          gx = mul(g, out)
//   log          gx = div(g, x)
//   tanh         gx = mul(g, sub(c1, mul(out, out)))
//   sigmoid      gx = mul(g, mul(out, sub(c1, out)))
//   leaky_relu   gx = leaky_relu_grad(g, x, slope)
//   softmax      gx = mul(out, sub(g, broadcast(sum(mul(g, out)))))
//   log_softmax  gx = sub(g, mul(exp(out), broadcast(sum(g))))
//   nll_loss     gx = nll_loss_grad(g, t) with the forward's attributes
//   conv2d       gx, gw as lns.linear of window rows; gb = sum(g) over n, oh, ow

!f = !lns.num<f = 10>

// exp: the forward saves its output.
// CHECK-LABEL: func.func @loss_forward
// CHECK: %[[E:.+]] = lns.exp
// CHECK: return %{{.+}}, %[[E]]
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<4x!lns.num<f = 10>>, %[[OUT:[^:]+]]: tensor<4x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]] : tensor<!lns.num<f = 10>>) {{.*}} dimensions = [0]
// CHECK-NEXT: %[[GX:.+]] = lns.mul %[[G]], %[[OUT]] : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>>
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  %e = lns.exp %x : tensor<4x!f>
  %s = lns.sum %e dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// log: nothing saved, the input is an argument.
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]]
// CHECK-NEXT: %[[GX:.+]] = lns.div %[[G]], %[[X]] : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>>
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  %l = lns.log %x : tensor<4x!f>
  %s = lns.sum %l dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<4x!lns.num<f = 10>>, %[[OUT:[^:]+]]: tensor<4x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]]
// CHECK-NEXT: %[[C1:.+]] = lns.constant dense<0> : tensor<4xi64> -> tensor<4x!lns.num<f = 10>>
// CHECK-NEXT: %[[SQ:.+]] = lns.mul %[[OUT]], %[[OUT]]
// CHECK-NEXT: %[[D:.+]] = lns.sub %[[C1]], %[[SQ]]
// CHECK-NEXT: %[[GX:.+]] = lns.mul %[[G]], %[[D]]
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  %t = lns.tanh %x : tensor<4x!f>
  %s = lns.sum %t dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<4x!lns.num<f = 10>>, %[[OUT:[^:]+]]: tensor<4x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]]
// CHECK-NEXT: %[[C1:.+]] = lns.constant dense<0> : tensor<4xi64> -> tensor<4x!lns.num<f = 10>>
// CHECK-NEXT: %[[D:.+]] = lns.sub %[[C1]], %[[OUT]]
// CHECK-NEXT: %[[SLOPE:.+]] = lns.mul %[[OUT]], %[[D]]
// CHECK-NEXT: %[[GX:.+]] = lns.mul %[[G]], %[[SLOPE]]
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  %y = lns.sigmoid %x : tensor<4x!f>
  %s = lns.sum %y dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// leaky_relu with a constant slope: the forward saves the slope; the input
// is the argument itself.
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_forward
// CHECK: %[[SL:.+]] = lns.constant dense<-13>
// CHECK: return %{{.+}}, %[[SL]]
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x!lns.num<f = 10>>, %[[SLOPE:[^:]+]]: tensor<4x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]]
// CHECK-NEXT: %[[GX:.+]] = lns.leaky_relu_grad %[[G]], %[[X]], %[[SLOPE]] : tensor<4x!lns.num<f = 10>>
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  %slope = lns.constant dense<-13> : tensor<4xi64> -> tensor<4x!f>
  %y = lns.leaky_relu %x, %slope : tensor<4x!f>
  %s = lns.sum %y dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// softmax over dim 1 of [2, 3]: the row sums of mul(g, out) are [2],
// broadcast back along dim 1.
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<2x3x!lns.num<f = 10>>, %[[OUT:[^:]+]]: tensor<2x3x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]] {{.*}} dimensions = [0, 1]
// CHECK-NEXT: %[[GO:.+]] = lns.mul %[[G]], %[[OUT]]
// CHECK-NEXT: %[[DOT:.+]] = lns.sum %[[GO]] dims [1] : tensor<2x3x!lns.num<f = 10>> -> tensor<2x!lns.num<f = 10>>
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: %[[DOTB:.+]] = linalg.broadcast ins(%[[DOT]] : tensor<2x!lns.num<f = 10>>) {{.*}} dimensions = [1]
// CHECK-NEXT: %[[D:.+]] = lns.sub %[[G]], %[[DOTB]]
// CHECK-NEXT: %[[GX:.+]] = lns.mul %[[OUT]], %[[D]]
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<2x3x!f>) -> tensor<!f> {
  %p = lns.softmax %x dim 1 : tensor<2x3x!f>
  %s = lns.sum %p dims [0, 1] : tensor<2x3x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// log_softmax over dim 0 of [2, 3]: the column sums of g are [3].
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<2x3x!lns.num<f = 10>>, %[[OUT:[^:]+]]: tensor<2x3x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]]
// CHECK-NEXT: %[[SUM:.+]] = lns.sum %[[G]] dims [0] : tensor<2x3x!lns.num<f = 10>> -> tensor<3x!lns.num<f = 10>>
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: %[[SUMB:.+]] = linalg.broadcast ins(%[[SUM]] : tensor<3x!lns.num<f = 10>>) {{.*}} dimensions = [0]
// CHECK-NEXT: %[[P:.+]] = lns.exp %[[OUT]]
// CHECK-NEXT: %[[M:.+]] = lns.mul %[[P]], %[[SUMB]]
// CHECK-NEXT: %[[GX:.+]] = lns.sub %[[G]], %[[M]]
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<2x3x!f>) -> tensor<!f> {
  %l = lns.log_softmax %x dim 0 : tensor<2x3x!f>
  %s = lns.sum %l dims [0, 1] : tensor<2x3x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// nll_loss, mean with ignore_index 1: the target takes no gradient (only
// argument 0 is differentiated); the gradient op keeps the attributes.
!f = !lns.num<f = 10>
// CHECK: gradients = [0]>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<2x3x!lns.num<f = 10>>, %[[T:[^:]+]]: tensor<2xi64>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>) -> tensor<2x3x!lns.num<f = 10>>
// CHECK-NEXT: %[[GX:.+]] = lns.nll_loss_grad %[[DL]], %[[T]] reduction mean {ignore_index = 1 : i64} : tensor<!lns.num<f = 10>>, tensor<2xi64> -> tensor<2x3x!lns.num<f = 10>>
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<2x3x!f>, %t: tensor<2xi64>) -> tensor<!f> {
  %n = lns.nll_loss %x, %t reduction mean {ignore_index = 1 : i64} : tensor<2x3x!f>, tensor<2xi64> -> tensor<!f>
  return %n : tensor<!f>
}

// -----

// nll_loss, none: the upstream gradient per sample, [2].
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<2x3x!lns.num<f = 10>>, %[[T:[^:]+]]: tensor<2xi64>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]] : tensor<!lns.num<f = 10>>) outs(%{{.+}} : tensor<2x!lns.num<f = 10>>)
// CHECK-NEXT: %[[GX:.+]] = lns.nll_loss_grad %[[G]], %[[T]] reduction none : tensor<2x!lns.num<f = 10>>, tensor<2xi64> -> tensor<2x3x!lns.num<f = 10>>
// CHECK-NEXT: return %[[GX]]
func.func @loss(%x: tensor<2x3x!f>, %t: tensor<2xi64>) -> tensor<!f> {
  %n = lns.nll_loss %x, %t reduction none : tensor<2x3x!f>, tensor<2xi64> -> tensor<2x!f>
  %s = lns.sum %n dims [0] : tensor<2x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// conv2d of x [N=2, C=2, 5, 6] by w [F=4, C=2, KH=3, KW=2] with a bias,
// strides [2, 1], pad_low [1, 0], pad_high [1, 0]; g is [2, 4, 3, 5].
// gx: padded input [7, 6]; reach d·(K − 1) = [2, 1]; g spread by the strides
//   into Z of [2, 4, 2 + 7, 1 + 6] = [2, 4, 9, 7] at [0, 0, 2, 1], strides
//   [1, 1, 2, 1]; padded position p reads spread[p − k·d + reach]: window
//   rows [N·7·6, F·KH·KW] = [84, 24] against w as [C, F·KH·KW] = [2, 24]
//   (transposed [1, 0, 2, 3]); [84, 2] back to [2, 2, 7, 6], cropped at
//   pad_low [1, 0] to [2, 2, 5, 6].
// gw: the forward's rows [30, 12] transposed to [12, 30], g as [F, N·OH·OW]
//   = [4, 30] (transposed [1, 0, 2, 3]): lns.linear [4, 12], expanded to
//   [4, 2, 3, 2].
// gb: sum of g over dims [0, 2, 3].
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x2x5x6x!lns.num<f = 10>>, %[[W:[^:]+]]: tensor<4x2x3x2x!lns.num<f = 10>>, %{{[^:]+}}: tensor<4x!lns.num<f = 10>>, %[[DL:[^:]+]]: tensor<!lns.num<f = 10>>)
// CHECK-SAME: -> (tensor<2x2x5x6x!lns.num<f = 10>>, tensor<4x2x3x2x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>>)
// CHECK: %[[G:.+]] = linalg.broadcast ins(%[[DL]] : tensor<!lns.num<f = 10>>) outs(%{{.+}} : tensor<2x4x3x5x!lns.num<f = 10>>)
// CHECK: %[[Z:.+]] = lns.constant -9007199254740991 : i64 -> !lns.num<f = 10>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x4x9x7x!lns.num<f = 10>>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[Z]] : !lns.num<f = 10>) outs(%[[E]] : tensor<2x4x9x7x!lns.num<f = 10>>)
// CHECK: %[[SPREAD:.+]] = tensor.insert_slice %[[G]] into %[[FILL]][0, 0, 2, 1] [2, 4, 3, 5] [1, 1, 2, 1] : tensor<2x4x3x5x!lns.num<f = 10>> into tensor<2x4x9x7x!lns.num<f = 10>>
// CHECK: %[[WIN:.+]] = tensor.generate
// CHECK: arith.constant -1 : index
// CHECK: arith.constant 2 : index
// CHECK: tensor.extract %[[SPREAD]][
// CHECK: } : tensor<2x7x6x4x3x2x!lns.num<f = 10>>
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[WIN]] {{.*}} into tensor<84x24x!lns.num<f = 10>>
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<4x2x3x2x!lns.num<f = 10>>) outs(%{{.+}} : tensor<2x4x3x2x!lns.num<f = 10>>) permutation = [1, 0, 2, 3]
// CHECK: %[[WC:.+]] = tensor.collapse_shape %[[WT]] {{\[}}[0], [1, 2, 3]] : tensor<2x4x3x2x!lns.num<f = 10>> into tensor<2x24x!lns.num<f = 10>>
// CHECK: %[[GXR:.+]] = lns.linear %[[ROWS]], %[[WC]] : tensor<84x24x!lns.num<f = 10>>, tensor<2x24x!lns.num<f = 10>> -> tensor<84x2x!lns.num<f = 10>>
// CHECK: %[[GXE:.+]] = tensor.expand_shape %[[GXR]] {{.*}} into tensor<2x7x6x2x!lns.num<f = 10>>
// CHECK: %[[GXP:.+]] = linalg.transpose ins(%[[GXE]] {{.*}} permutation = [0, 3, 1, 2]
// CHECK: %[[GX:.+]] = tensor.extract_slice %[[GXP]][0, 0, 1, 0] [2, 2, 5, 6] [1, 1, 1, 1] : tensor<2x2x7x6x!lns.num<f = 10>> to tensor<2x2x5x6x!lns.num<f = 10>>
// CHECK: %[[PAD:.+]] = tensor.pad %[[X]] low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK: %[[XWIN:.+]] = tensor.generate
// CHECK: tensor.extract %[[PAD]][
// CHECK: } : tensor<2x3x5x2x3x2x!lns.num<f = 10>>
// CHECK: %[[XROWS:.+]] = tensor.collapse_shape %[[XWIN]] {{.*}} into tensor<30x12x!lns.num<f = 10>>
// CHECK: %[[GT:.+]] = linalg.transpose ins(%[[G]] : tensor<2x4x3x5x!lns.num<f = 10>>) outs(%{{.+}} : tensor<4x2x3x5x!lns.num<f = 10>>) permutation = [1, 0, 2, 3]
// CHECK: %[[GF:.+]] = tensor.collapse_shape %[[GT]] {{\[}}[0], [1, 2, 3]] : tensor<4x2x3x5x!lns.num<f = 10>> into tensor<4x30x!lns.num<f = 10>>
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[XROWS]] : tensor<30x12x!lns.num<f = 10>>) outs(%{{.+}} : tensor<12x30x!lns.num<f = 10>>) permutation = [1, 0]
// CHECK: %[[GWF:.+]] = lns.linear %[[GF]], %[[XT]] : tensor<4x30x!lns.num<f = 10>>, tensor<12x30x!lns.num<f = 10>> -> tensor<4x12x!lns.num<f = 10>>
// CHECK: %[[GW:.+]] = tensor.expand_shape %[[GWF]] {{\[}}[0], [1, 2, 3]] output_shape [4, 2, 3, 2] : tensor<4x12x!lns.num<f = 10>> into tensor<4x2x3x2x!lns.num<f = 10>>
// CHECK: %[[GB:.+]] = lns.sum %[[G]] dims [0, 2, 3] : tensor<2x4x3x5x!lns.num<f = 10>> -> tensor<4x!lns.num<f = 10>>
// CHECK: return %[[GX]], %[[GW]], %[[GB]]
func.func @loss(%x: tensor<2x2x5x6x!f>, %w: tensor<4x2x3x2x!f>, %b: tensor<4x!f>) -> tensor<!f> {
  %c = lns.conv2d %x, %w bias %b strides [2, 1] dilations [1, 1] pad_low [1, 0] pad_high [1, 0] : tensor<2x2x5x6x!f>, tensor<4x2x3x2x!f>, tensor<4x!f> -> tensor<2x4x3x5x!f>
  %s = lns.sum %c dims [0, 1, 2, 3] : tensor<2x4x3x5x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// conv2d with a constant weight and no bias, dilations [2, 1]: only gx.
// Reach [2, 1]; spread [1, 2, 2 + 4, 1 + 4] = [1, 2, 6, 5], g [1, 2, 2, 3]
// inserted at [0, 0, 2, 1] with unit strides; the kernel offsets step by
// −2 and −1.
!f = !lns.num<f = 10>
// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: (%{{[^:]+}}: tensor<1x1x4x4x!lns.num<f = 10>>, %[[W:[^:]+]]: tensor<2x1x2x2x!lns.num<f = 10>>, %{{[^:]+}}: tensor<!lns.num<f = 10>>) -> tensor<1x1x4x4x!lns.num<f = 10>>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 2, 1] [1, 2, 2, 3] [1, 1, 1, 1] : tensor<1x2x2x3x!lns.num<f = 10>> into tensor<1x2x6x5x!lns.num<f = 10>>
// CHECK: tensor.generate
// CHECK: arith.constant -2 : index
// CHECK: arith.constant -1 : index
// CHECK: linalg.transpose ins(%[[W]]
// CHECK: lns.linear {{.*}} -> tensor<16x1x!lns.num<f = 10>>
// CHECK: %[[GX:.+]] = tensor.extract_slice {{.*}}[0, 0, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1]
// CHECK-NOT: lns.linear
// CHECK-NOT: lns.sum
// CHECK: return %[[GX]] : tensor<1x1x4x4x!lns.num<f = 10>>
func.func @loss(%x: tensor<1x1x4x4x!f>) -> tensor<!f> {
  %w = lns.constant dense<0> : tensor<2x1x2x2xi64> -> tensor<2x1x2x2x!f>
  %c = lns.conv2d %x, %w strides [1, 1] dilations [2, 1] pad_low [0, 0] pad_high [0, 0] : tensor<1x1x4x4x!f>, tensor<2x1x2x2x!f> -> tensor<1x2x2x3x!f>
  %s = lns.sum %c dims [0, 1, 2, 3] : tensor<1x2x2x3x!f> -> tensor<!f>
  return %s : tensor<!f>
}
