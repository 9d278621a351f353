// RUN: lamina-opt %s --split-input-file --lamina-outline-blocks --lamina-generate-backward=function=main | FileCheck %s

// A 3-block model, each block h.i: y = x + dropout(gelu(x·Wᵢᵀ)). One block
// function, differentiated once: @h_block_forward returns y and what its
// backward needs (the matmul's result, gelu's input: x and W are its
// arguments), @h_block_backward takes the block's arguments, that value
// and dy, and returns (dx, dW):
//   dz = dropout(dy) (the forward's mask: same seed and offset base),
//   da = gelu'(m)·dz, dx = dy + da·W, dW = daᵀ·x.
// The program calls the forward three times, and the backward three times
// in reverse, each with its instance's arguments, its saved value and the
// cotangent the next block's backward returned. The forward of the pair
// saves each block's input and each block's saved value.

// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W0:[a-z0-9]+]]: tensor<8x8xf32>, %[[W1:[a-z0-9]+]]: tensor<8x8xf32>, %[[W2:[a-z0-9]+]]: tensor<8x8xf32>, %[[SEED:[a-z0-9]+]]: i64)
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : i64
// CHECK: %[[H0:.+]]:2 = call @h_block_forward(%[[X]], %[[W0]], %[[SEED]], %[[C1]]) {lamina.module = "h.0"}
// CHECK: %[[H1:.+]]:2 = call @h_block_forward(%[[H0]]#0, %[[W1]], %[[SEED]], %[[C2]]) {lamina.module = "h.1"}
// CHECK: %[[H2:.+]]:2 = call @h_block_forward(%[[H1]]#0, %[[W2]], %[[SEED]], %[[C3]]) {lamina.module = "h.2"}
// CHECK: return %[[H2]]#0, %[[H1]]#0, %[[H2]]#1, %[[H0]]#0, %[[H1]]#1, %[[H0]]#1

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W0:[a-z0-9]+]]: tensor<8x8xf32>, %[[W1:[a-z0-9]+]]: tensor<8x8xf32>, %[[W2:[a-z0-9]+]]: tensor<8x8xf32>, %[[SEED:[a-z0-9]+]]: i64, %[[IN2:[a-z0-9]+]]: tensor<4x8xf32>, %[[M2:[a-z0-9]+]]: tensor<4x8xf32>, %[[IN1:[a-z0-9]+]]: tensor<4x8xf32>, %[[M1:[a-z0-9]+]]: tensor<4x8xf32>, %[[M0:[a-z0-9]+]]: tensor<4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK: %[[C3:.+]] = arith.constant 3 : i64
// CHECK: %[[G2:.+]]:2 = call @h_block_backward(%[[IN2]], %[[W2]], %[[SEED]], %[[C3]], %[[M2]], %[[DY]]) {lamina.module = "h.2"}
// CHECK: %[[C2:.+]] = arith.constant 2 : i64
// CHECK: %[[G1:.+]]:2 = call @h_block_backward(%[[IN1]], %[[W1]], %[[SEED]], %[[C2]], %[[M1]], %[[G2]]#0) {lamina.module = "h.1"}
// CHECK: %[[C1:.+]] = arith.constant 1 : i64
// CHECK: %[[G0:.+]]:2 = call @h_block_backward(%[[X]], %[[W0]], %[[SEED]], %[[C1]], %[[M0]], %[[G1]]#0) {lamina.module = "h.0"}
// CHECK: return %[[G0]]#0, %[[G0]]#1, %[[G1]]#1, %[[G2]]#1

// CHECK-LABEL: func.func private @h_block_forward(
// CHECK-SAME: %[[BX:[a-z0-9]+]]: tensor<4x8xf32>, %[[BW:[a-z0-9]+]]: tensor<8x8xf32>, %[[BSEED:[a-z0-9]+]]: i64, %[[BBASE:[a-z0-9]+]]: i64) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {lamina.block = "h"}
// CHECK: %[[M:.+]] = lamina.matmul "h.0.fc" %[[BX]], %[[BW]]
// CHECK: %[[A:.+]] = lamina.activation "h.0.act" gelu_tanh %[[M]]
// CHECK: %[[D:.+]] = lamina.dropout "h.0.drop" %[[A]] <p = 0.1, training> seed %[[BSEED]] offset_base %[[BBASE]]
// CHECK: %[[Y:.+]] = arith.addf %[[BX]], %[[D]]
// CHECK: return %[[Y]], %[[M]]

// CHECK-LABEL: func.func private @h_block_backward(
// CHECK-SAME: %[[BX:[a-z0-9]+]]: tensor<4x8xf32>, %[[BW:[a-z0-9]+]]: tensor<8x8xf32>, %[[BSEED:[a-z0-9]+]]: i64, %[[BBASE:[a-z0-9]+]]: i64, %[[BM:[a-z0-9]+]]: tensor<4x8xf32>, %[[BDY:[a-z0-9]+]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) attributes {lamina.block = "h"}
// CHECK: %[[DZ:.+]] = lamina.dropout "h.0.drop" %[[BDY]] <p = 0.1, training> seed %[[BSEED]] offset_base %[[BBASE]]
// CHECK: %[[DA:.+]] = lamina.activation_grad "h.0.act" gelu_tanh %[[BM]], %[[DZ]]
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[BW]] : tensor<8x8xf32>)
// CHECK: %[[DXM:.+]] = lamina.matmul "h.0.fc" %[[DA]], %[[WT]]
// CHECK: %[[DAT:.+]] = linalg.transpose ins(%[[DA]] : tensor<4x8xf32>)
// CHECK: %[[XT:.+]] = linalg.transpose ins(%[[BX]] : tensor<4x8xf32>)
// CHECK: %[[DW:.+]] = lamina.matmul "h.0.fc" %[[DAT]], %[[XT]]
// CHECK: %[[DX:.+]] = arith.addf %[[BDY]], %[[DXM]]
// CHECK: return %[[DX]], %[[DW]]
// The block function itself is gone: only its forward and backward are
// called.
// CHECK-NOT: func.func private @h_block(
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>,
                %w2: tensor<8x8xf32>, %seed: i64) -> tensor<4x8xf32> {
  %l0 = lamina.linear "h.0.fc" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a0 = lamina.activation "h.0.act" gelu_tanh %l0 : tensor<4x8xf32>
  %d0 = lamina.dropout "h.0.drop" %a0 <p = 0.1, training, offset = 1> seed %seed : tensor<4x8xf32>
  %h0 = arith.addf %x, %d0 {lamina.module = "h.0"} : tensor<4x8xf32>
  %l1 = lamina.linear "h.1.fc" %h0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = lamina.activation "h.1.act" gelu_tanh %l1 : tensor<4x8xf32>
  %d1 = lamina.dropout "h.1.drop" %a1 <p = 0.1, training, offset = 2> seed %seed : tensor<4x8xf32>
  %h1 = arith.addf %h0, %d1 {lamina.module = "h.1"} : tensor<4x8xf32>
  %l2 = lamina.linear "h.2.fc" %h1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a2 = lamina.activation "h.2.act" gelu_tanh %l2 : tensor<4x8xf32>
  %d2 = lamina.dropout "h.2.drop" %a2 <p = 0.1, training, offset = 3> seed %seed : tensor<4x8xf32>
  %h2 = arith.addf %h1, %d2 {lamina.module = "h.2"} : tensor<4x8xf32>
  return %h2 : tensor<4x8xf32>
}

// -----

// The list checkpointed as a module (transform.lamina.checkpoint_module):
// as inline, nothing inside it is saved. The block's forward saves
// nothing; the program's backward recomputes h.0's forward for h.1's input
// and each block's backward recomputes the block from its input.

// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W0:[a-z0-9]+]]: tensor<8x8xf32>, %[[W1:[a-z0-9]+]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H0:.+]] = call @h_block_forward(%[[X]], %[[W0]]) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H1:.+]] = call @h_block_forward(%[[H0]], %[[W1]]) {lamina.module = "h.1"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: return %[[H1]] : tensor<4x8xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W0:[a-z0-9]+]]: tensor<8x8xf32>, %[[W1:[a-z0-9]+]]: tensor<8x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK: %[[H0:.+]] = call @h_block_forward(%[[X]], %[[W0]]) {lamina.module = "h.0"}
// CHECK: %[[G1:.+]]:2 = call @h_block_backward(%[[H0]], %[[W1]], %[[DY]]) {lamina.module = "h.1"}
// CHECK: %[[G0:.+]]:2 = call @h_block_backward(%[[X]], %[[W0]], %[[G1]]#0) {lamina.module = "h.0"}
// CHECK: return %[[G0]]#0, %[[G0]]#1, %[[G1]]#1
// CHECK-LABEL: func.func private @h_block_forward(
// CHECK-SAME: -> tensor<4x8xf32> attributes {lamina.block = "h"}
// CHECK-LABEL: func.func private @h_block_backward(
// CHECK-SAME: %[[BX:[a-z0-9]+]]: tensor<4x8xf32>, %[[BW:[a-z0-9]+]]: tensor<8x8xf32>, %[[BDY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK: %[[M:.+]] = lamina.matmul "h.0.fc" %[[BX]], %[[BW]]
// CHECK: lamina.activation_grad "h.0.act" gelu_tanh %[[M]], %[[BDY]]
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.checkpoint_modules = ["h"]} {
  %l0 = lamina.linear "h.0.fc" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a0 = lamina.activation "h.0.act" gelu_tanh %l0 : tensor<4x8xf32>
  %l1 = lamina.linear "h.1.fc" %a0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = lamina.activation "h.1.act" gelu_tanh %l1 : tensor<4x8xf32>
  return %a1 : tensor<4x8xf32>
}
