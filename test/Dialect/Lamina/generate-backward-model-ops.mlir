// RUN: lamina-opt %s --split-input-file --lamina-generate-backward | FileCheck %s

// A GPT's ends: token embedding + broadcast positions, tanh, a masked fill,
// the loss. Derived by hand, walking backwards from dl (0-d):
//   dlogits = cross_entropy_grad(logits, t, dl)         (the loss's rule)
//   dh      = masked_fill(dlogits, mask, 0)             (filled: no gradient)
//   ds      = dh · (1 − tanh(s)²)                       (tanh from its result)
//   dpos    = Σ_batch ds                                (the broadcast's sum)
//   dW      = embedding_grad(idx, ds)                   (rows scatter-added)
// The integer indices and targets get no gradient (gradients = 1, 2).
// CHECK: main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 2, gradients = [1, 2]>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[IDX:[a-z0-9]+]]: tensor<2x4xi64>, %{{[a-z0-9]+}}: tensor<16x8xf32>, %{{[a-z0-9]+}}: tensor<4x8xf32>, %[[T:[a-z0-9]+]]: tensor<8xi64>, %[[FILLED:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[TANH:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[DL:[a-z0-9]+]]: tensor<f32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
// CHECK: %[[LOGITS:.+]] = tensor.collapse_shape %[[FILLED]]
// CHECK: %[[DLOGITS:.+]] = lamina.cross_entropy_grad %[[LOGITS]], %[[T]], %[[DL]] ignore_index -1
// CHECK: %[[DH3:.+]] = tensor.expand_shape %[[DLOGITS]]
// CHECK: %[[MASK:.+]] = arith.constant dense<{{\[\[\[}}true], [false], [true], [false]]]> : tensor<1x4x1xi1>
// CHECK: %[[DH:.+]] = lamina.masked_fill %[[DH3]], %[[MASK]] value 0.000000e+00
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<2x4x8xf32>
// CHECK: %[[SQ:.+]] = arith.mulf %[[TANH]], %[[TANH]]
// CHECK: %[[DER:.+]] = arith.subf %[[ONE]], %[[SQ]]
// CHECK: %[[DS:.+]] = arith.mulf %[[DH]], %[[DER]]
// CHECK: %[[DPOS:.+]] = linalg.reduce ins(%[[DS]] : tensor<2x4x8xf32>) outs(%{{.+}} : tensor<4x8xf32>) dimensions = [0]
// CHECK: %[[DW:.+]] = lamina.embedding_grad %[[IDX]], %[[DS]] : (tensor<2x4xi64>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
// CHECK: return %[[DW]], %[[DPOS]]
func.func @main(%idx: tensor<2x4xi64>, %w: tensor<16x8xf32>, %pos: tensor<4x8xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %e = lamina.embedding "wte" %idx, %w : (tensor<2x4xi64>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %init = tensor.empty() : tensor<2x4x8xf32>
  %p = linalg.broadcast ins(%pos : tensor<4x8xf32>) outs(%init : tensor<2x4x8xf32>) dimensions = [0]
  %s = arith.addf %e, %p : tensor<2x4x8xf32>
  %h = math.tanh %s : tensor<2x4x8xf32>
  %mask = arith.constant dense<"0x05"> : tensor<1x4x1xi1>
  %m = lamina.masked_fill %h, %mask value 0.0 : tensor<2x4x8xf32>, tensor<1x4x1xi1>
  %f = tensor.collapse_shape %m [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %l = lamina.cross_entropy %f, %t ignore_index -1 : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// a = exp(x), b = sqrt(a), r = rsqrt(b), y = r^2.5, each rule from results:
//   dr = dy · 2.5 · r^(2.5 − 1)
//   db = dr · (−0.5 · r³)          (rsqrt' = −0.5·b^(−3/2) = −0.5·r³)
//   da = db · 0.5 / b              (sqrt'  = 0.5 / sqrt(a))
//   dx = da · a                    (exp'   = exp)
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xf32>, %[[R:[a-z0-9]+]]: tensor<4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>, %[[A:[a-z0-9]+]]: tensor<4xf32>, %[[DY:[a-z0-9]+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[C:.+]] = arith.constant dense<2.500000e+00>
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00>
// CHECK: %[[CM1:.+]] = arith.subf %[[C]], %[[ONE]]
// CHECK: %[[POW:.+]] = math.powf %[[R]], %[[CM1]]
// CHECK: %[[SCALED:.+]] = arith.mulf %[[C]], %[[POW]]
// CHECK: %[[DR:.+]] = arith.mulf %[[DY]], %[[SCALED]]
// CHECK: %[[R2:.+]] = arith.mulf %[[R]], %[[R]]
// CHECK: %[[R3:.+]] = arith.mulf %[[R2]], %[[R]]
// CHECK: %[[MHALF:.+]] = arith.constant dense<-5.000000e-01>
// CHECK: %[[RDER:.+]] = arith.mulf %[[MHALF]], %[[R3]]
// CHECK: %[[DB:.+]] = arith.mulf %[[DR]], %[[RDER]]
// CHECK: %[[HALF:.+]] = arith.constant dense<5.000000e-01>
// CHECK: %[[DBH:.+]] = arith.mulf %[[DB]], %[[HALF]]
// CHECK: %[[DA:.+]] = arith.divf %[[DBH]], %[[B]]
// CHECK: %[[DX:.+]] = arith.mulf %[[DA]], %[[A]]
// CHECK: return %[[DX]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<2.5> : tensor<4xf32>
  %a = math.exp %x : tensor<4xf32>
  %b = math.sqrt %a : tensor<4xf32>
  %r = math.rsqrt %b : tensor<4xf32>
  %p = math.powf %r, %c : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

// RMSNorm's casts and rotary tables: w = bf16(x), u = f32(w), y = cos(u) ·
// sin(u). Walking back:
//   du = dy · c · cos(u) − dy · s · sin(u)          (sin, cos rules)
//   dw = truncf(du)      (a widening cast narrows its cotangent back)
//   dx = extf(dw)        (a narrowing cast widens it)
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xf32>, %[[S:[a-z0-9]+]]: tensor<4xf32>, %[[C:[a-z0-9]+]]: tensor<4xf32>, %[[U:[a-z0-9]+]]: tensor<4xf32>, %[[DY:[a-z0-9]+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[DC:.+]] = arith.mulf %[[DY]], %[[S]]
// CHECK: %[[DS:.+]] = arith.mulf %[[DY]], %[[C]]
// CHECK: %[[COS:.+]] = math.cos %[[U]]
// CHECK: %[[FROMSIN:.+]] = arith.mulf %[[DS]], %[[COS]]
// CHECK: %[[SIN:.+]] = math.sin %[[U]]
// CHECK: %[[DCSIN:.+]] = arith.mulf %[[DC]], %[[SIN]]
// CHECK: %[[FROMCOS:.+]] = arith.negf %[[DCSIN]]
// CHECK: %[[DU:.+]] = arith.addf %[[FROMSIN]], %[[FROMCOS]]
// CHECK: %[[DW:.+]] = arith.truncf %[[DU]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: %[[DX:.+]] = arith.extf %[[DW]] : tensor<4xbf16> to tensor<4xf32>
// CHECK: return %[[DX]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = arith.truncf %x : tensor<4xf32> to tensor<4xbf16>
  %u = arith.extf %w : tensor<4xbf16> to tensor<4xf32>
  %c = math.cos %u : tensor<4xf32>
  %s = math.sin %u : tensor<4xf32>
  %y = arith.mulf %c, %s : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Per-row losses (reduction none): the backward takes one cotangent per
// row and passes it to the loss's gradient, which keeps `none`.
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x6xf32>, %[[T:[a-z0-9]+]]: tensor<4xi64>, %[[DL:[a-z0-9]+]]: tensor<4xf32>) -> tensor<4x6xf32>
// CHECK: %[[DX:.+]] = lamina.cross_entropy_grad %[[X]], %[[T]], %[[DL]] ignore_index -100 none : (tensor<4x6xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x6xf32>
// CHECK: return %[[DX]]
func.func @main(%x: tensor<4x6xf32>, %t: tensor<4xi64>) -> tensor<4xf32> {
  %l = lamina.cross_entropy %x, %t ignore_index -100 none : (tensor<4x6xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %l : tensor<4xf32>
}

// -----

// A mask computed in the program (t = tanh(x); t.masked_fill(t > 0.5, 0)):
// the backward recomputes the comparison from the saved t instead of
// saving the mask (programs take and return no i1 tensors).
//   dt = masked_fill(dy, t > 0.5, 0);  dx = dt · (1 − t²)
// CHECK: main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 1, gradients = [0]>
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[T:[a-z0-9]+]]: tensor<4xf32>, %[[DY:[a-z0-9]+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[HALF:.+]] = arith.constant dense<5.000000e-01>
// CHECK: %[[MASK:.+]] = arith.cmpf ogt, %[[T]], %[[HALF]] : tensor<4xf32>
// CHECK: %[[DT:.+]] = lamina.masked_fill %[[DY]], %[[MASK]] value 0.000000e+00
// CHECK: arith.mulf %[[T]], %[[T]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = math.tanh %x : tensor<4xf32>
  %half = arith.constant dense<0.5> : tensor<4xf32>
  %mask = arith.cmpf ogt, %t, %half : tensor<4xf32>
  %y = lamina.masked_fill %t, %mask value 0.0 : tensor<4xf32>, tensor<4xi1>
  return %y : tensor<4xf32>
}

// -----

// A rotation's transpose rotates by the opposite angle (the tables are
// constants, as the importer's are):
//   dx = rope(dy, cos, −sin)
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<2x4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[S:.+]] = arith.constant dense<2.500000e-01> : tensor<1x4x4xf32>
// CHECK: %[[NEG:.+]] = arith.negf %[[S]] : tensor<1x4x4xf32>
// CHECK: %[[C:.+]] = arith.constant dense<5.000000e-01> : tensor<1x4x4xf32>
// CHECK: %[[DX:.+]] = lamina.rope %[[DY]], %[[C]], %[[NEG]] halves
// CHECK: return %[[DX]]
func.func @main(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %c = arith.constant dense<0.5> : tensor<1x4x4xf32>
  %s = arith.constant dense<0.25> : tensor<1x4x4xf32>
  %y = lamina.rope %x, %c, %s halves : tensor<2x4x8xf32>, tensor<1x4x4xf32>
  return %y : tensor<2x4x8xf32>
}
