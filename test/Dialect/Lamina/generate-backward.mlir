// RUN: lamina-opt %s --split-input-file --lamina-generate-backward | FileCheck %s
// RUN: rm -rf %t && split-file %s %t
// RUN: lamina-opt %t/g.mlir --lamina-generate-backward=function=g | FileCheck %s --check-prefix=G
// RUN: lamina-opt %t/g.mlir --lamina-generate-backward --lamina-generate-backward=function=g | FileCheck %s --check-prefix=BOTH

// Every expectation below is derived from the math, not copied from the
// pass's output. Notation: the forward is y = f(x); dy is the cotangent of
// y (an argument of @main_backward), dx the gradient returned for x.
// lamina.matmul %a, %w computes a·wᵀ with w [N, K] (PyTorch's layout).

// nn.Linear with bias, y = x·Wᵀ + b:
//   dx = dy·W   = lamina.matmul %dy, transpose(W)      ([4,16]·[8,16]ᵀ → [4,8])
//   dW = dyᵀ·x  = lamina.matmul transpose(dy), transpose(x)  ([16,4]·[8,4]ᵀ → [16,8])
//   db = Σ_rows dy                                      (a reduction over dim 0)
// x, W and b are arguments (passed to the backward again), so the forward
// saves nothing and returns only y.

// CHECK: module attributes {lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 0, gradients = [0, 1, 2]>}}
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>) -> tensor<4x16xf32> {
// CHECK: %[[M:.+]] = lamina.matmul "fc" %[[X]], %[[W]] : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[Y:.+]] = lamina.bias_add "fc" %[[M]], %[[B]] : tensor<4x16xf32>, tensor<16xf32>
// CHECK: return %[[Y]] : tensor<4x16xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[DY:[a-z0-9]+]]: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>)
// CHECK-NOT: lamina.bias_add
// The bias add is walked first (reverse order): db = Σ_rows dy.
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<16xf32>) -> tensor<16xf32>
// CHECK: %[[DB:.+]] = linalg.reduce ins(%[[DY]] : tensor<4x16xf32>) outs(%[[ACC]] : tensor<16xf32>) dimensions = [0]
// CHECK: arith.addf
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<16x8xf32>) outs(%{{.+}} : tensor<8x16xf32>) permutation = [1, 0]
// CHECK: %[[DX:.+]] = lamina.matmul "fc" %[[DY]], %[[WT]] : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK: %[[DYT:.+]] = linalg.transpose ins(%[[DY]] : tensor<4x16xf32>) outs(%{{.+}} : tensor<16x4xf32>) permutation = [1, 0]
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[X]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<8x4xf32>) permutation = [1, 0]
// CHECK: %[[DW:.+]] = lamina.matmul "fc" %[[DYT]], %[[XT]] : (tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<16x8xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]] : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// y = gelu_tanh(x·Wᵀ + b): the derivative of gelu is taken at the
// pre-activation p = x·Wᵀ + b, which is not an argument: the forward saves
// it (saved = 1) and dp = activation_grad(p, dy) feeds the linear rules.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 1, gradients = [0, 1, 2]>}
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: -> (tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK: %[[M:.+]] = lamina.matmul "fc"
// CHECK: %[[P:.+]] = lamina.bias_add "fc" %[[M]]
// CHECK: %[[Y:.+]] = lamina.activation "fc" gelu_tanh %[[P]] : tensor<4x16xf32>
// CHECK: return %[[Y]], %[[P]] : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %{{[a-z0-9]+}}: tensor<16xf32>, %[[P:[a-z0-9]+]]: tensor<4x16xf32>, %[[DY:[a-z0-9]+]]: tensor<4x16xf32>)
// CHECK-NOT: lamina.activation "fc"
// CHECK: %[[DP:.+]] = lamina.activation_grad "fc" gelu_tanh %[[P]], %[[DY]] : tensor<4x16xf32>
// CHECK: linalg.reduce ins(%[[DP]] : tensor<4x16xf32>) outs(%{{.+}} : tensor<16xf32>) dimensions = [0]
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<16x8xf32>)
// CHECK: lamina.matmul "fc" %[[DP]], %[[WT]] : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK: %[[DPT:.+]] = linalg.transpose ins(%[[DP]] : tensor<4x16xf32>) outs(%{{.+}} : tensor<16x4xf32>)
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[X]] : tensor<4x8xf32>)
// CHECK: lamina.matmul "fc" %[[DPT]], %[[XT]] : (tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<16x8xf32>
// CHECK-NOT: lamina.activation "fc"
// CHECK-NOT: lamina.bias_add
// CHECK: return
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// relu: the same structure, relu'(p) = [p > 0] through activation_grad relu.

// CHECK: saved = 1,
// CHECK-LABEL: func.func @main_forward(
// CHECK: %[[P:.+]] = lamina.bias_add "fc"
// CHECK: %[[Y:.+]] = lamina.activation "fc" relu %[[P]]
// CHECK: return %[[Y]], %[[P]]
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[P:[a-z0-9]+]]: tensor<4x16xf32>, %[[DY:[a-z0-9]+]]: tensor<4x16xf32>)
// CHECK: lamina.activation_grad "fc" relu %[[P]], %[[DY]] : tensor<4x16xf32>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// y = dropout(p) with mask m: y = m·p/(1 − q), so dp = m·dy/(1 − q): the
// same dropout (same config, same seed) applied to dy regenerates m; no
// mask tensor is saved, and the i64 seed gets no gradient.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 0, gradients = [0, 1, 2]>}
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %{{[a-z0-9]+}}: i64) -> tensor<4x16xf32> {
// CHECK: %[[Y:.+]] = lamina.dropout "fc" %{{.+}} <p = 0.25, training, offset = 3> seed %{{.+}} : tensor<4x16xf32>
// CHECK: return %[[Y]] : tensor<4x16xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %{{[a-z0-9]+}}: tensor<16xf32>, %[[S:[a-z0-9]+]]: i64, %[[DY:[a-z0-9]+]]: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>)
// CHECK: %[[DP:.+]] = lamina.dropout "fc" %[[DY]] <p = 0.25, training, offset = 3> seed %[[S]] : tensor<4x16xf32>
// CHECK: linalg.reduce ins(%[[DP]] : tensor<4x16xf32>)
// CHECK: lamina.matmul "fc" %[[DP]], %{{.+}} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK: lamina.matmul "fc" {{.+}} -> tensor<16x8xf32>
// CHECK-NOT: lamina.dropout
// CHECK: return
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: i64) -> tensor<4x16xf32> {
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.25, training, offset = 3> seed %s : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A residual y = x + x·Wᵀ: x is used twice, so dx is the sum of the two
// contributions: dy (through the add) + dy·W (through the layer).

// CHECK: saved = 0, gradients = [0, 1]>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<8x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>)
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<8x8xf32>)
// CHECK: %[[DXL:.+]] = lamina.matmul "fc" %[[DY]], %[[WT]] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[DW:.+]] = lamina.matmul "fc" {{.+}} -> tensor<8x8xf32>
// CHECK: %[[DX:.+]] = arith.addf %[[DY]], %[[DXL]] : tensor<4x8xf32>
// CHECK: return %[[DX]], %[[DW]] : tensor<4x8xf32>, tensor<8x8xf32>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = arith.addf %x, %h : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Two GELU layers, no checkpoint: the backward needs fc2's pre-activation,
// fc2's input h = gelu(fc1's pre-activation) (for dW2 = dp2ᵀ·h) and fc1's
// pre-activation: saved = 3, and the backward recomputes nothing.

// CHECK: saved = 3,
// CHECK-LABEL: func.func @main_forward(
// CHECK: %[[P1:.+]] = lamina.bias_add "fc1"
// CHECK: %[[H:.+]] = lamina.activation "fc1" gelu_tanh %[[P1]]
// CHECK: %[[P2:.+]] = lamina.bias_add "fc2"
// CHECK: %[[Y:.+]] = lamina.activation "fc2" gelu_tanh %[[P2]]
// CHECK: return %[[Y]], %[[P2]], %[[H]], %[[P1]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[P2:[a-z0-9]+]]: tensor<4x8xf32>, %[[H:[a-z0-9]+]]: tensor<4x16xf32>, %[[P1:[a-z0-9]+]]: tensor<4x16xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK-NOT: lamina.matmul "fc1" %{{[a-z0-9]+}}, %{{[a-z0-9]+}} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: lamina.activation_grad "fc2" gelu_tanh %[[P2]], %[[DY]]
// CHECK: linalg.transpose ins(%[[H]] : tensor<4x16xf32>)
// CHECK: lamina.activation_grad "fc1" gelu_tanh %[[P1]],
// CHECK-NOT: lamina.activation "fc1"
// CHECK: return
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = lamina.linear_act "fc2" %h, %w2 bias %b2 activation gelu_tanh : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The same function with fc1 checkpointed: fc1's internal values (its
// pre-activation and its output h) are not saved, only fc2's
// pre-activation is (saved = 1 < 3); fc1's pieces are recomputed in the
// backward from the arguments x, W1, b1, before fc2's backward matmuls
// need h, and fc1's activation_grad uses the recomputed pre-activation.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 1, gradients = [0, 1, 2, 3, 4]>}
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: %[[P2:.+]] = lamina.bias_add "fc2"
// CHECK: %[[Y:.+]] = lamina.activation "fc2" gelu_tanh %[[P2]]
// CHECK: return %[[Y]], %[[P2]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W1:[a-z0-9]+]]: tensor<16x8xf32>, %[[B1:[a-z0-9]+]]: tensor<16xf32>, %[[W2:[a-z0-9]+]]: tensor<8x16xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %[[P2:[a-z0-9]+]]: tensor<4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>)
// CHECK: %[[DP2:.+]] = lamina.activation_grad "fc2" gelu_tanh %[[P2]], %[[DY]]
// Recomputed: h = gelu(x·W1ᵀ + b1), before any backward matmul.
// CHECK-NOT: lamina.matmul
// CHECK: %[[M1:.+]] = lamina.matmul "fc1" %[[X]], %[[W1]] : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[P1:.+]] = lamina.bias_add "fc1" %[[M1]], %[[B1]]
// CHECK: %[[H:.+]] = lamina.activation "fc1" gelu_tanh %[[P1]]
// CHECK: %[[W2T:.+]] = linalg.transpose ins(%[[W2]] : tensor<8x16xf32>)
// CHECK: %[[DH:.+]] = lamina.matmul "fc2" %[[DP2]], %[[W2T]] : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[HT:.+]] = linalg.transpose ins(%[[H]] : tensor<4x16xf32>) outs(%{{.+}} : tensor<16x4xf32>)
// CHECK: lamina.matmul "fc2" %{{.+}}, %[[HT]] : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
// CHECK: lamina.activation_grad "fc1" gelu_tanh %[[P1]], %[[DH]]
// Recomputed once.
// CHECK-NOT: lamina.activation "fc1"
// CHECK: return
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh {lamina.checkpoint} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = lamina.linear_act "fc2" %h, %w2 bias %b2 activation gelu_tanh : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// LayerNorm with weight and bias: its backward needs only x (an argument)
// and the weight; dx, dweight and dbias are the three results of
// layer_norm_grad.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 0, gradients = [0, 1, 2]>}
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[W:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: %[[DX:[a-z_0-9]+]], %[[DW:[a-z_0-9]+]], %[[DB:[a-z_0-9]+]] = lamina.layer_norm_grad %[[X]], %[[DY]] weight %[[W]] eps 1.000000e-05 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: return %[[DX]], %[[DW]], %[[DB]]
func.func @main(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %y = lamina.layer_norm "ln" %x weight %w bias %b eps 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// softmax: dx = y·(dy − Σ y·dy) needs the output y, which the forward
// saves (after returning it as the result); the backward does not
// recompute the softmax.

// CHECK: saved = 1, gradients = [0]>
// CHECK-LABEL: func.func @main_forward(
// CHECK: %[[Y:.+]] = lamina.softmax %{{.+}} dim 2 : tensor<2x4x8xf32>
// CHECK: return %[[Y]], %[[Y]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<2x4x8xf32>, %[[Y:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NOT: lamina.softmax %
// CHECK: %[[DX:.+]] = lamina.softmax_grad %[[Y]], %[[DY]] dim 2 : tensor<2x4x8xf32>
// CHECK-NEXT: return %[[DX]]
func.func @main(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %y = lamina.softmax %x dim 2 : tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Reshapes around a layer: the transpose of collapse_shape is the
// expand_shape with the same reassociation, and vice versa. The collapsed
// x (for dW) is recomputed from x, not saved.

// CHECK: saved = 0,
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[W:[a-z0-9]+]]: tensor<8x8xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>)
// CHECK: %[[DYC:.+]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[XC:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[DXC:.+]] = lamina.matmul "fc" %[[DYC]], %{{.+}} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: linalg.transpose ins(%[[XC]] : tensor<8x8xf32>)
// CHECK: %[[DW:.+]] = lamina.matmul "fc"
// CHECK: %[[DX:.+]] = tensor.expand_shape %[[DXC]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
// CHECK: return %[[DX]], %[[DW]] : tensor<2x4x8xf32>, tensor<8x8xf32>
func.func @main(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %h = lamina.linear "fc" %c, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = tensor.expand_shape %h [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// linalg.transpose with permutation [1, 2, 0] (out[i, j, k] = x[k, i, j]):
// its transpose is the inverse permutation [2, 0, 1], not [1, 2, 0] again.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<2x3x4xf32>, %[[DY:[a-z0-9]+]]: tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[DX:.+]] = linalg.transpose ins(%[[DY]] : tensor<3x4x2xf32>) outs(%{{.+}} : tensor<2x3x4xf32>) permutation = [2, 0, 1]
// CHECK-NEXT: return %[[DX]]
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %init = tensor.empty() : tensor<3x4x2xf32>
  %y = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%init : tensor<3x4x2xf32>) permutation = [1, 2, 0]
  return %y : tensor<3x4x2xf32>
}

// -----

// C = A·B per batch (linalg.batch_matmul, the attention scores):
//   dA = dC·Bᵀ   ([2,4,3]·[2,3,8] → [2,4,8])
//   dB = Aᵀ·dC   ([2,8,4]·[2,4,3] → [2,8,3])
// each into a zero-filled init; the zero init of C itself gets nothing.

// CHECK: saved = 0, gradients = [0, 1]>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[B:[a-z0-9]+]]: tensor<2x8x3xf32>, %[[DC:[a-z0-9]+]]: tensor<2x4x3xf32>) -> (tensor<2x4x8xf32>, tensor<2x8x3xf32>)
// CHECK: %[[BT:.+]] = linalg.transpose ins(%[[B]] : tensor<2x8x3xf32>) outs(%{{.+}} : tensor<2x3x8xf32>) permutation = [0, 2, 1]
// CHECK: %[[Z0:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[I0:.+]] = linalg.fill ins(%[[Z0]] : f32) outs(%{{.+}} : tensor<2x4x8xf32>)
// CHECK: %[[DA:.+]] = linalg.batch_matmul ins(%[[DC]], %[[BT]] : tensor<2x4x3xf32>, tensor<2x3x8xf32>) outs(%[[I0]] : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[AT:.+]] = linalg.transpose ins(%[[A]] : tensor<2x4x8xf32>) outs(%{{.+}} : tensor<2x8x4xf32>) permutation = [0, 2, 1]
// CHECK: %[[Z1:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[I1:.+]] = linalg.fill ins(%[[Z1]] : f32) outs(%{{.+}} : tensor<2x8x3xf32>)
// CHECK: %[[DB:.+]] = linalg.batch_matmul ins(%[[AT]], %[[DC]] : tensor<2x8x4xf32>, tensor<2x4x3xf32>) outs(%[[I1]] : tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
// CHECK: return %[[DA]], %[[DB]]
func.func @main(%a: tensor<2x4x8xf32>, %b: tensor<2x8x3xf32>) -> tensor<2x4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x8xf32>, tensor<2x8x3xf32>) outs(%init : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %c : tensor<2x4x3xf32>
}

// -----

// The same for a 2-D linalg.matmul: dA = dC·Bᵀ, dB = Aᵀ·dC.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<8x3xf32>, %[[DC:[a-z0-9]+]]: tensor<4x3xf32>) -> (tensor<4x8xf32>, tensor<8x3xf32>)
// CHECK: %[[BT:.+]] = linalg.transpose ins(%[[B]] : tensor<8x3xf32>) outs(%{{.+}} : tensor<3x8xf32>) permutation = [1, 0]
// CHECK: %[[DA:.+]] = linalg.matmul ins(%[[DC]], %[[BT]] : tensor<4x3xf32>, tensor<3x8xf32>) outs(%{{.+}} : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[AT:.+]] = linalg.transpose ins(%[[A]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<8x4xf32>) permutation = [1, 0]
// CHECK: %[[DB:.+]] = linalg.matmul ins(%[[AT]], %[[DC]] : tensor<8x4xf32>, tensor<4x3xf32>) outs(%{{.+}} : tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK: return %[[DA]], %[[DB]]
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %c : tensor<4x3xf32>
}

// -----

// A batch_matmul on bf16 operands accumulating in f32 (mixed precision):
// each operand's cotangent is summed in f32, then rounded once to bf16.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x4x8xbf16>, %[[B:[a-z0-9]+]]: tensor<2x8x3xbf16>, %[[DC:[a-z0-9]+]]: tensor<2x4x3xf32>) -> (tensor<2x4x8xbf16>, tensor<2x8x3xbf16>)
// CHECK: %[[BT:.+]] = linalg.transpose ins(%[[B]] : tensor<2x8x3xbf16>)
// CHECK: %[[I0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x4x8xf32>)
// CHECK: %[[SA:.+]] = linalg.batch_matmul ins(%[[DC]], %[[BT]] : tensor<2x4x3xf32>, tensor<2x3x8xbf16>) outs(%[[I0]] : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DA:.+]] = arith.truncf %[[SA]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK: %[[AT:.+]] = linalg.transpose ins(%[[A]] : tensor<2x4x8xbf16>)
// CHECK: %[[I1:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x8x3xf32>)
// CHECK: %[[SB:.+]] = linalg.batch_matmul ins(%[[AT]], %[[DC]] : tensor<2x8x4xbf16>, tensor<2x4x3xf32>) outs(%[[I1]] : tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
// CHECK: %[[DB:.+]] = arith.truncf %[[SB]] : tensor<2x8x3xf32> to tensor<2x8x3xbf16>
// CHECK: return %[[DA]], %[[DB]]
func.func @main(%a: tensor<2x4x8xbf16>, %b: tensor<2x8x3xbf16>) -> tensor<2x4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x4x8xbf16>, tensor<2x8x3xbf16>) outs(%init : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %c : tensor<2x4x3xf32>
}

// -----

// fused_qkv: output feature f = (h·hd + d)·3 + t holds q (t = 0), k (t = 1)
// or v (t = 2) of head h, element d. The cotangent of the projection is
// therefore dq, dk, dv interleaved on a new last dim of size 3
// (dP[..., h, d, t] = [dq, dk, dv][t][..., h, d]) and collapsed to
// [..., 3·heads·hd]; then the linear rules with dP: dx = dP·W,
// dW = dPᵀ·x, db = Σ_rows dP.

// CHECK-DAG: #[[PART:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[FULL:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK: saved = 0,
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<24x8xf32>, %{{[a-z0-9]+}}: tensor<24xf32>, %[[DQ:[a-z0-9]+]]: tensor<4x2x4xf32>, %[[DK:[a-z0-9]+]]: tensor<4x2x4xf32>, %[[DV:[a-z0-9]+]]: tensor<4x2x4xf32>) -> (tensor<4x8xf32>, tensor<24x8xf32>, tensor<24xf32>)
// CHECK: %[[STACK:.+]] = linalg.generic {indexing_maps = [#[[PART]], #[[PART]], #[[PART]], #[[FULL]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[DQ]], %[[DK]], %[[DV]] : tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>) outs(%{{.+}} : tensor<4x2x4x3xf32>)
// CHECK: ^bb0(%[[Q:[a-z_0-9]+]]: f32, %[[K:[a-z_0-9]+]]: f32, %[[V:[a-z_0-9]+]]: f32, %{{[a-z_0-9]+}}: f32):
// CHECK: %[[T:.+]] = linalg.index 3 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[ISQ:.+]] = arith.cmpi eq, %[[T]], %[[C0]] : index
// CHECK-DAG: %[[ISK:.+]] = arith.cmpi eq, %[[T]], %[[C1]] : index
// CHECK: %[[KV:.+]] = arith.select %[[ISK]], %[[K]], %[[V]] : f32
// CHECK: %[[SEL:.+]] = arith.select %[[ISQ]], %[[Q]], %[[KV]] : f32
// CHECK: linalg.yield %[[SEL]] : f32
// CHECK: %[[DP:.+]] = tensor.collapse_shape %[[STACK]] {{\[\[}}0], [1, 2, 3]] : tensor<4x2x4x3xf32> into tensor<4x24xf32>
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<24x8xf32>) outs(%{{.+}} : tensor<8x24xf32>)
// CHECK: %[[DX:.+]] = lamina.matmul "qkv" %[[DP]], %[[WT]] : (tensor<4x24xf32>, tensor<8x24xf32>) -> tensor<4x8xf32>
// CHECK: %[[DPT:.+]] = linalg.transpose ins(%[[DP]] : tensor<4x24xf32>) outs(%{{.+}} : tensor<24x4xf32>)
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[X]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK: %[[DW:.+]] = lamina.matmul "qkv" %[[DPT]], %[[XT]] : (tensor<24x4xf32>, tensor<8x4xf32>) -> tensor<24x8xf32>
// CHECK: %[[DB:.+]] = linalg.reduce ins(%[[DP]] : tensor<4x24xf32>) outs(%{{.+}} : tensor<24xf32>) dimensions = [0]
// CHECK: return %[[DX]], %[[DW]], %[[DB]] : tensor<4x8xf32>, tensor<24x8xf32>, tensor<24xf32>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>) -> (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>) {
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 2 world_size 1 : (tensor<4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>)
  return %q, %k, %v : tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>
}

// -----

// An argument that does not reach the result gets a zero gradient of its
// type; an i64 seed is not differentiable: it has no entry in
// `gradients` and no result in @main_backward.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 0, gradients = [0, 1, 2]>}
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4x8xf32>, %{{[a-z0-9]+}}: tensor<16x8xf32>, %{{[a-z0-9]+}}: tensor<3xf32>, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<3xf32>) {
// CHECK: %[[DX:.+]] = lamina.matmul "fc" {{.+}} -> tensor<4x8xf32>
// CHECK: %[[DW:.+]] = lamina.matmul "fc" {{.+}} -> tensor<16x8xf32>
// CHECK-DAG: %[[E:.+]] = tensor.empty() : tensor<3xf32>
// CHECK-DAG: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[DU:.+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<3xf32>) -> tensor<3xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DU]] : tensor<4x8xf32>, tensor<16x8xf32>, tensor<3xf32>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %unused: tensor<3xf32>, %s: i64) -> tensor<4x16xf32> {
  %h = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y = lamina.dropout "drop" %h <p = 0.5, training> seed %s : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A bf16 layer (the GPU kernels'): the same rules in bf16, except that the
// bias gradient Σ_rows dy accumulates in f32 and is rounded once.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<4x16xbf16>) -> (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<16xf32>) -> tensor<16xf32>
// CHECK: %[[SUM:.+]] = linalg.reduce ins(%[[DY]] : tensor<4x16xbf16>) outs(%[[ACC]] : tensor<16xf32>) dimensions = [0]
// CHECK-NEXT: (%[[IN:.+]]: bf16, %[[INIT:.+]]: f32) {
// CHECK-NEXT: %[[WIDE:.+]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: %[[NEXT:.+]] = arith.addf %[[WIDE]], %[[INIT]] : f32
// CHECK-NEXT: linalg.yield %[[NEXT]] : f32
// CHECK: %[[DB:.+]] = arith.truncf %[[SUM]] : tensor<16xf32> to tensor<16xbf16>
// CHECK: lamina.matmul "fc" %[[DY]], %{{.+}} : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16>
// CHECK: return %{{.+}}, %{{.+}}, %[[DB]] : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>
func.func @main(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %y = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

// A checkpointed module "blk" (transform.lamina.checkpoint_module): its
// layer (by path) and the op before it (by lamina.module) are recomputed
// from x in the backward, so the forward saves nothing (saved = 0, where
// without the checkpoint it would save s and h); "head" is not in it.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 0, gradients = [0, 1, 2]>}
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: -> tensor<4x8xf32> {
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W1:[a-z0-9]+]]: tensor<16x8xf32>, %[[W2:[a-z0-9]+]]: tensor<8x16xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK: %[[S:.+]] = arith.mulf %[[X]], %[[X]] {lamina.module = "blk"}
// CHECK: %[[P:.+]] = lamina.matmul "blk.fc1" %[[S]], %[[W1]]
// CHECK: %[[H:.+]] = lamina.activation "blk.fc1" gelu_tanh %[[P]]
// CHECK: linalg.transpose ins(%[[H]] : tensor<4x16xf32>)
// CHECK: lamina.activation_grad "blk.fc1" gelu_tanh %[[P]],
// CHECK: linalg.transpose ins(%[[S]] : tensor<4x8xf32>)
// CHECK-NOT: lamina.activation "blk.fc1"
// CHECK: return
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %w2: tensor<8x16xf32>) -> tensor<4x8xf32> attributes {lamina.checkpoint_modules = ["blk"]} {
  %s = arith.mulf %x, %x {lamina.module = "blk"} : tensor<4x8xf32>
  %h = lamina.fused_linear "blk.fc1" %s, %w1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %y = lamina.linear "head" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Two functions: the default (function=main) differentiates @main and
// leaves @g alone; function=g (the G run, on this chunk alone) the reverse;
// running both records both pairs in one lamina.training dictionary.

// CHECK: lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 1, gradients = [0, 1, 2]>}
// CHECK-LABEL: func.func @main_backward(
// CHECK-LABEL: func.func @g(
// CHECK-NEXT: lamina.linear "g"
// CHECK-NOT: @g_forward
// CHECK-NOT: @g_backward

// G: module attributes {lamina.training = {g = #lamina.training_pair<forward = @g_forward, backward = @g_backward, saved = 0, gradients = [0, 1]>}}
// G-LABEL: func.func @main(
// G-NEXT: lamina.linear_act "fc"
// G-LABEL: func.func @g_forward(
// G-SAME: -> tensor<4x16xf32>
// G-LABEL: func.func @g_backward(
// G-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>)
// G: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<16x8xf32>)
// G: %[[DX:.+]] = lamina.matmul "g" %[[DY]], %[[WT]]
// G: %[[DYT:.+]] = linalg.transpose ins(%[[DY]] : tensor<4x16xf32>)
// G: %[[XT:.+]] = linalg.transpose ins(%[[X]] : tensor<4x8xf32>)
// G: %[[DW:.+]] = lamina.matmul "g" %[[DYT]], %[[XT]]
// G: return %[[DX]], %[[DW]]
// G-NOT: @main_forward
// G-NOT: @main_backward

// BOTH: lamina.training = {g = #lamina.training_pair<forward = @g_forward, backward = @g_backward, saved = 0, gradients = [0, 1]>, main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 1, gradients = [0, 1, 2]>}
// BOTH-DAG: func.func @main_forward(
// BOTH-DAG: func.func @main_backward(
// BOTH-DAG: func.func @g_forward(
// BOTH-DAG: func.func @g_backward(

//--- g.mlir
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
func.func @g(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear "g" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
