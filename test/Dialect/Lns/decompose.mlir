// RUN: lamina-opt %s --lamina-lns-decompose | FileCheck %s

// lamina-lns-decompose expands the composite lns ops (softmax, log_softmax,
// nll_loss, nll_loss_grad, conv2d) into lns arithmetic, linalg, tensor and
// scf ops. Every sum is a sequential lns.sum or the K loop of an lns.linear.
// Z is the code -9007199254740991.

!f = !lns.num<f = 23>

// softmax over dim 1 of [4, 10]: e = exp(x), s = sum(e) over dim 1 ([4]),
// broadcast back to [4, 10], p = div(e, s).
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x10x!lns.num<f = 23>>)
// CHECK: %[[E:.+]] = lns.exp %[[X]] : tensor<4x10x!lns.num<f = 23>>
// CHECK: %[[S:.+]] = lns.sum %[[E]] dims [1] : tensor<4x10x!lns.num<f = 23>> -> tensor<4x!lns.num<f = 23>>
// CHECK: %[[I:.+]] = tensor.empty() : tensor<4x10x!lns.num<f = 23>>
// CHECK: %[[B:.+]] = linalg.broadcast ins(%[[S]] : tensor<4x!lns.num<f = 23>>) outs(%[[I]] : tensor<4x10x!lns.num<f = 23>>) dimensions = [1]
// CHECK: %[[P:.+]] = lns.div %[[E]], %[[B]] : tensor<4x10x!lns.num<f = 23>>, tensor<4x10x!lns.num<f = 23>>
// CHECK: return %[[P]]
// CHECK-NOT: lns.softmax
func.func @softmax(%x: tensor<4x10x!f>) -> tensor<4x10x!f> {
  %0 = lns.softmax %x dim 1 : tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// log_softmax over dim 0 of [4, 10]: s = sum(exp(x)) over dim 0 ([10]),
// broadcast to [4, 10], y = sub(x, log(s)).
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x10x!lns.num<f = 23>>)
// CHECK: %[[E:.+]] = lns.exp %[[X]] : tensor<4x10x!lns.num<f = 23>>
// CHECK: %[[S:.+]] = lns.sum %[[E]] dims [0] : tensor<4x10x!lns.num<f = 23>> -> tensor<10x!lns.num<f = 23>>
// CHECK: %[[B:.+]] = linalg.broadcast ins(%[[S]] : tensor<10x!lns.num<f = 23>>) outs(%{{.+}} : tensor<4x10x!lns.num<f = 23>>) dimensions = [0]
// CHECK: %[[L:.+]] = lns.log %[[B]] : tensor<4x10x!lns.num<f = 23>>
// CHECK: %[[Y:.+]] = lns.sub %[[X]], %[[L]] : tensor<4x10x!lns.num<f = 23>>, tensor<4x10x!lns.num<f = 23>>
// CHECK: return %[[Y]]
// CHECK-NOT: lns.log_softmax
func.func @log_softmax(%x: tensor<4x10x!f>) -> tensor<4x10x!f> {
  %0 = lns.log_softmax %x dim 0 : tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// nll_loss, mean, ignore_index 3, of [4, 10] log-probabilities:
//   term[i] = t[i] != 3 ? neg(x[i, t[i]]) : Z      ([4], a tensor.generate;
//             an ignored sample reads column 0, its term is Z)
//   loss = div(sum(term), encode(#{i : t[i] != 3}))  (scalar tensors)
// CHECK-LABEL: func.func @nll_loss_mean
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x10x!lns.num<f = 23>>, %[[T:[^:]+]]: tensor<4xi64>)
// CHECK: %[[Z:.+]] = lns.constant -9007199254740991 : i64 -> !lns.num<f = 23>
// CHECK: %[[TERMS:.+]] = tensor.generate
// CHECK-NEXT: ^bb0(%[[I:.+]]: index):
// CHECK-NEXT: %[[TI:.+]] = tensor.extract %[[T]][%[[I]]] : tensor<4xi64>
// CHECK-NEXT: %[[IGN:.+]] = arith.constant 3 : i64
// CHECK-NEXT: %[[KEPT:.+]] = arith.cmpi ne, %[[TI]], %[[IGN]] : i64
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[SAFE:.+]] = arith.select %[[KEPT]], %[[TI]], %[[C0]] : i64
// CHECK-NEXT: %[[CLS:.+]] = arith.index_cast %[[SAFE]] : i64 to index
// CHECK-NEXT: %[[PICK:.+]] = tensor.extract %[[X]][%[[I]], %[[CLS]]] : tensor<4x10x!lns.num<f = 23>>
// CHECK-NEXT: %[[NEG:.+]] = lns.neg %[[PICK]] : !lns.num<f = 23>
// CHECK-NEXT: %[[TERM:.+]] = arith.select %[[KEPT]], %[[NEG]], %[[Z]] : !lns.num<f = 23>
// CHECK-NEXT: tensor.yield %[[TERM]] : !lns.num<f = 23>
// CHECK-NEXT: } : tensor<4x!lns.num<f = 23>>
// CHECK: %[[SUM:.+]] = lns.sum %[[TERMS]] dims [0] : tensor<4x!lns.num<f = 23>> -> tensor<!lns.num<f = 23>>
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK: %[[LB:.+]] = arith.constant 0 : index
// CHECK: %[[UB:.+]] = arith.constant 4 : index
// CHECK: %[[STEP:.+]] = arith.constant 1 : index
// CHECK: %[[COUNT:.+]] = scf.for %[[J:.+]] = %[[LB]] to %[[UB]] step %[[STEP]] iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (i64) {
// CHECK: %[[TJ:.+]] = tensor.extract %[[T]][%[[J]]] : tensor<4xi64>
// CHECK: %[[KJ:.+]] = arith.cmpi ne, %[[TJ]], %{{.+}} : i64
// CHECK: %[[ONE:.+]] = arith.extui %[[KJ]] : i1 to i64
// CHECK: %[[NEXT:.+]] = arith.addi %[[ACC]], %[[ONE]] : i64
// CHECK: scf.yield %[[NEXT]] : i64
// CHECK: %[[FCOUNT:.+]] = arith.sitofp %[[COUNT]] : i64 to f64
// CHECK: %[[DIVISOR:.+]] = lns.encode %[[FCOUNT]] : f64 -> !lns.num<f = 23>
// CHECK: %[[DT:.+]] = tensor.from_elements %[[DIVISOR]] : tensor<!lns.num<f = 23>>
// CHECK: %[[LOSS:.+]] = lns.div %[[SUM]], %[[DT]] : tensor<!lns.num<f = 23>>, tensor<!lns.num<f = 23>>
// CHECK: return %[[LOSS]]
func.func @nll_loss_mean(%x: tensor<4x10x!f>, %t: tensor<4xi64>) -> tensor<!f> {
  %0 = lns.nll_loss %x, %t reduction mean {ignore_index = 3 : i64} : tensor<4x10x!f>, tensor<4xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// nll_loss, sum: the same terms (default ignore_index -100), their
// sequential sum, no count.
// CHECK-LABEL: func.func @nll_loss_sum
// CHECK: %[[TERMS:.+]] = tensor.generate
// CHECK: arith.constant -100 : i64
// CHECK: lns.neg
// CHECK: } : tensor<4x!lns.num<f = 23>>
// CHECK: %[[SUM:.+]] = lns.sum %[[TERMS]] dims [0] : tensor<4x!lns.num<f = 23>> -> tensor<!lns.num<f = 23>>
// CHECK-NOT: scf.for
// CHECK-NOT: lns.div
// CHECK: return %[[SUM]]
func.func @nll_loss_sum(%x: tensor<4x10x!f>, %t: tensor<4xi64>) -> tensor<!f> {
  %0 = lns.nll_loss %x, %t reduction sum : tensor<4x10x!f>, tensor<4xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// nll_loss, none: the [4] terms themselves.
// CHECK-LABEL: func.func @nll_loss_none
// CHECK: %[[TERMS:.+]] = tensor.generate
// CHECK: lns.neg
// CHECK: } : tensor<4x!lns.num<f = 23>>
// CHECK-NOT: lns.sum
// CHECK: return %[[TERMS]] : tensor<4x!lns.num<f = 23>>
func.func @nll_loss_none(%x: tensor<4x10x!f>, %t: tensor<4xi64>) -> tensor<4x!f> {
  %0 = lns.nll_loss %x, %t reduction none : tensor<4x10x!f>, tensor<4xi64> -> tensor<4x!f>
  return %0 : tensor<4x!f>
}

// nll_loss_grad, mean: s = div(cm1, encode(#kept)), cm1 the code 1 (-1.0);
// gx[i, j] = (t[i] kept and t[i] == j) ? mul(s, g) : Z, [4, 10].
// CHECK-LABEL: func.func @nll_loss_grad_mean
// CHECK-SAME: (%[[G:[^:]+]]: tensor<!lns.num<f = 23>>, %[[T:[^:]+]]: tensor<4xi64>)
// CHECK: %[[Z:.+]] = lns.constant -9007199254740991 : i64 -> !lns.num<f = 23>
// CHECK: %[[CM1:.+]] = lns.constant 1 : i64 -> !lns.num<f = 23>
// CHECK: %[[COUNT:.+]] = scf.for
// CHECK: arith.extui
// CHECK: %[[FCOUNT:.+]] = arith.sitofp %[[COUNT]] : i64 to f64
// CHECK: %[[DIVISOR:.+]] = lns.encode %[[FCOUNT]] : f64 -> !lns.num<f = 23>
// CHECK: %[[S:.+]] = lns.div %[[CM1]], %[[DIVISOR]] : !lns.num<f = 23>, !lns.num<f = 23>
// CHECK: %[[GX:.+]] = tensor.generate
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[J:.+]]: index):
// CHECK: %[[TI:.+]] = tensor.extract %[[T]][%[[I]]] : tensor<4xi64>
// CHECK: %[[KEPT:.+]] = arith.cmpi ne, %[[TI]], %{{.+}} : i64
// CHECK: %[[CLS:.+]] = arith.index_cast
// CHECK: %[[EQ:.+]] = arith.cmpi eq, %[[CLS]], %[[J]] : index
// CHECK: %[[HIT:.+]] = arith.andi %[[KEPT]], %[[EQ]] : i1
// CHECK: %[[GV:.+]] = tensor.extract %[[G]][] : tensor<!lns.num<f = 23>>
// CHECK: %[[M:.+]] = lns.mul %[[S]], %[[GV]] : !lns.num<f = 23>, !lns.num<f = 23>
// CHECK: %[[V:.+]] = arith.select %[[HIT]], %[[M]], %[[Z]] : !lns.num<f = 23>
// CHECK: tensor.yield %[[V]]
// CHECK: } : tensor<4x10x!lns.num<f = 23>>
// CHECK: return %[[GX]]
func.func @nll_loss_grad_mean(%g: tensor<!f>, %t: tensor<4xi64>) -> tensor<4x10x!f> {
  %0 = lns.nll_loss_grad %g, %t reduction mean : tensor<!f>, tensor<4xi64> -> tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// nll_loss_grad, none: s = cm1 (no count), the upstream gradient per sample
// g[i].
// CHECK-LABEL: func.func @nll_loss_grad_none
// CHECK-SAME: (%[[G:[^:]+]]: tensor<4x!lns.num<f = 23>>, %{{[^:]+}}: tensor<4xi64>)
// CHECK: %[[CM1:.+]] = lns.constant 1 : i64 -> !lns.num<f = 23>
// CHECK-NOT: scf.for
// CHECK: tensor.generate
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %{{.+}}: index):
// CHECK: %[[GV:.+]] = tensor.extract %[[G]][%[[I]]] : tensor<4x!lns.num<f = 23>>
// CHECK: lns.mul %[[CM1]], %[[GV]]
// CHECK: } : tensor<4x10x!lns.num<f = 23>>
func.func @nll_loss_grad_none(%g: tensor<4x!f>, %t: tensor<4xi64>) -> tensor<4x10x!f> {
  %0 = lns.nll_loss_grad %g, %t reduction none : tensor<4x!f>, tensor<4xi64> -> tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// conv2d of x [N=2, C=2, H=5, W=6] by w [F=4, C=2, KH=3, KW=2] with a bias,
// strides [2, 1], pad_low [1, 0], pad_high [1, 0]:
//   padded with Z to [2, 2, 7, 6];
//   OH = (7 − 3) / 2 + 1 = 3, OW = (6 − 2) / 1 + 1 = 5;
//   windows[n, oh, ow, c, kh, kw] = padded[n, c, oh·2 + kh·1 + 0, ow·1 + kw·1 + 0]
//     [2, 3, 5, 2, 3, 2], collapsed to rows [N·OH·OW, C·KH·KW] = [30, 12];
//   w collapsed to [4, 12]; lns.linear with the bias: [30, 4];
//   expanded to [N, OH, OW, F] = [2, 3, 5, 4], transposed to [2, 4, 3, 5].
// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x2x5x6x!lns.num<f = 23>>, %[[W:[^:]+]]: tensor<4x2x3x2x!lns.num<f = 23>>, %[[B:[^:]+]]: tensor<4x!lns.num<f = 23>>)
// CHECK: %[[Z:.+]] = lns.constant -9007199254740991 : i64 -> !lns.num<f = 23>
// CHECK: %[[PAD:.+]] = tensor.pad %[[X]] low[0, 0, 1, 0] high[0, 0, 1, 0] {
// CHECK: tensor.yield %[[Z]] : !lns.num<f = 23>
// CHECK: } : tensor<2x2x5x6x!lns.num<f = 23>> to tensor<2x2x7x6x!lns.num<f = 23>>
// CHECK: %[[WIN:.+]] = tensor.generate
// CHECK-NEXT: ^bb0(%[[N:[^:]+]]: index, %[[OH:[^:]+]]: index, %[[OW:[^:]+]]: index, %[[C:[^:]+]]: index, %[[KH:[^:]+]]: index, %[[KW:[^:]+]]: index):
// CHECK-NEXT: %[[SH:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[A:.+]] = arith.muli %[[OH]], %[[SH]] : index
// CHECK-NEXT: %[[DH:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[K:.+]] = arith.muli %[[KH]], %[[DH]] : index
// CHECK-NEXT: %[[R:.+]] = arith.addi %[[A]], %[[K]] : index
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %[[R]], %[[C0]] : index
// CHECK: %[[B1:.+]] = arith.muli %[[OW]], %{{.+}} : index
// CHECK: %[[K1:.+]] = arith.muli %[[KW]], %{{.+}} : index
// CHECK-NEXT: %[[R1:.+]] = arith.addi %[[B1]], %[[K1]] : index
// CHECK-NEXT: %[[C01:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[COL:.+]] = arith.addi %[[R1]], %[[C01]] : index
// CHECK-NEXT: %[[V:.+]] = tensor.extract %[[PAD]][%[[N]], %[[C]], %[[ROW]], %[[COL]]] : tensor<2x2x7x6x!lns.num<f = 23>>
// CHECK-NEXT: tensor.yield %[[V]] : !lns.num<f = 23>
// CHECK-NEXT: } : tensor<2x3x5x2x3x2x!lns.num<f = 23>>
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[WIN]] {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<2x3x5x2x3x2x!lns.num<f = 23>> into tensor<30x12x!lns.num<f = 23>>
// CHECK: %[[WF:.+]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : tensor<4x2x3x2x!lns.num<f = 23>> into tensor<4x12x!lns.num<f = 23>>
// CHECK: %[[Y:.+]] = lns.linear %[[ROWS]], %[[WF]] bias %[[B]] : tensor<30x12x!lns.num<f = 23>>, tensor<4x12x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>> -> tensor<30x4x!lns.num<f = 23>>
// CHECK: %[[NHWC:.+]] = tensor.expand_shape %[[Y]] {{\[}}[0, 1, 2], [3]] output_shape [2, 3, 5, 4] : tensor<30x4x!lns.num<f = 23>> into tensor<2x3x5x4x!lns.num<f = 23>>
// CHECK: %[[I:.+]] = tensor.empty() : tensor<2x4x3x5x!lns.num<f = 23>>
// CHECK: %[[NCHW:.+]] = linalg.transpose ins(%[[NHWC]] : tensor<2x3x5x4x!lns.num<f = 23>>) outs(%[[I]] : tensor<2x4x3x5x!lns.num<f = 23>>) permutation = [0, 3, 1, 2]
// CHECK: return %[[NCHW]] : tensor<2x4x3x5x!lns.num<f = 23>>
// CHECK-NOT: lns.conv2d
func.func @conv2d(%x: tensor<2x2x5x6x!f>, %w: tensor<4x2x3x2x!f>, %b: tensor<4x!f>) -> tensor<2x4x3x5x!f> {
  %0 = lns.conv2d %x, %w bias %b strides [2, 1] dilations [1, 1] pad_low [1, 0] pad_high [1, 0] : tensor<2x2x5x6x!f>, tensor<4x2x3x2x!f>, tensor<4x!f> -> tensor<2x4x3x5x!f>
  return %0 : tensor<2x4x3x5x!f>
}

// conv2d without padding or bias, dilations [2, 2]: x [1, 2, 6, 6] read
// directly (no tensor.pad), kernel offsets scaled by 2; reach 2·1 + 1 = 3,
// OH = OW = 6 − 3 + 1 = 4; rows [1·4·4, 2·2·2] = [16, 8], lns.linear
// without a bias to [16, 4], then [1, 4, 4, 4] twice.
// CHECK-LABEL: func.func @conv2d_dilated
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x2x6x6x!lns.num<f = 23>>, %[[W:[^:]+]]: tensor<4x2x2x2x!lns.num<f = 23>>)
// CHECK-NOT: tensor.pad
// CHECK: %[[WIN:.+]] = tensor.generate
// CHECK-NEXT: ^bb0(%{{[^:]+}}: index, %[[OH:[^:]+]]: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[KH:[^:]+]]: index, %{{[^:]+}}: index):
// CHECK-NEXT: %[[SH:.+]] = arith.constant 1 : index
// CHECK-NEXT: arith.muli %[[OH]], %[[SH]] : index
// CHECK-NEXT: %[[DH:.+]] = arith.constant 2 : index
// CHECK-NEXT: arith.muli %[[KH]], %[[DH]] : index
// CHECK: tensor.extract %[[X]][
// CHECK: } : tensor<1x4x4x2x2x2x!lns.num<f = 23>>
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %[[WIN]] {{.*}} into tensor<16x8x!lns.num<f = 23>>
// CHECK: %[[WF:.+]] = tensor.collapse_shape %[[W]] {{.*}} into tensor<4x8x!lns.num<f = 23>>
// CHECK: lns.linear %[[ROWS]], %[[WF]] : tensor<16x8x!lns.num<f = 23>>, tensor<4x8x!lns.num<f = 23>> -> tensor<16x4x!lns.num<f = 23>>
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
func.func @conv2d_dilated(%x: tensor<1x2x6x6x!f>, %w: tensor<4x2x2x2x!f>) -> tensor<1x4x4x4x!f> {
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [2, 2] pad_low [0, 0] pad_high [0, 0] : tensor<1x2x6x6x!f>, tensor<4x2x2x2x!f> -> tensor<1x4x4x4x!f>
  return %0 : tensor<1x4x4x4x!f>
}
