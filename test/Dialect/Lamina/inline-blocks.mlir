// RUN: lamina-opt %s --split-input-file --lamina-inline-blocks | FileCheck %s

// Each call becomes the block's body: paths name the call's instance, the
// constant offset base joins each dropout's offset (1 + 0, 1 + 1; 3 + 0,
// 3 + 1), a pipeline cut after the call follows its last op, and the
// block, uncalled, is erased.

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W0:[a-z0-9]+]]: tensor<8x8xf32>, %[[W1:[a-z0-9]+]]: tensor<8x8xf32>, %[[SEED:[a-z0-9]+]]: i64)
// CHECK: %[[L0:.+]] = lamina.linear "h.0.fc" %[[X]], %[[W0]]
// CHECK: %[[P0:.+]] = lamina.dropout "h.0.drop1" %[[L0]] <p = 0.1, training, offset = 1> seed %[[SEED]] {lamina.module = "h.0.drop1"}
// CHECK: %[[Q0:.+]] = lamina.dropout "h.0.drop2" %[[P0]] <p = 0.1, training, offset = 2> seed %[[SEED]] {lamina.module = "h.0.drop2"}
// CHECK: %[[H0:.+]] = arith.addf %[[X]], %[[Q0]] {lamina.module = "h.0", lamina.pipeline_cut}
// CHECK: %[[L1:.+]] = lamina.linear "h.1.fc" %[[H0]], %[[W1]]
// CHECK: %[[P1:.+]] = lamina.dropout "h.1.drop1" %[[L1]] <p = 0.1, training, offset = 3> seed %[[SEED]] {lamina.module = "h.1.drop1"}
// CHECK: %[[Q1:.+]] = lamina.dropout "h.1.drop2" %[[P1]] <p = 0.1, training, offset = 4> seed %[[SEED]] {lamina.module = "h.1.drop2"}
// CHECK: %[[H1:.+]] = arith.addf %[[H0]], %[[Q1]] {lamina.module = "h.1"}
// CHECK: return %[[H1]]
// CHECK-NOT: func.func
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %seed: i64) -> tensor<4x8xf32> {
  %c1 = arith.constant 1 : i64
  %h0 = func.call @h_block(%x, %w0, %seed, %c1) {lamina.module = "h.0", lamina.pipeline_cut} : (tensor<4x8xf32>, tensor<8x8xf32>, i64, i64) -> tensor<4x8xf32>
  %c3 = arith.constant 3 : i64
  %h1 = func.call @h_block(%h0, %w1, %seed, %c3) {lamina.module = "h.1"} : (tensor<4x8xf32>, tensor<8x8xf32>, i64, i64) -> tensor<4x8xf32>
  return %h1 : tensor<4x8xf32>
}
func.func private @h_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %seed: i64, %base: i64) -> tensor<4x8xf32>
    attributes {lamina.block = "h"} {
  %l = lamina.linear "h.0.fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %p = lamina.dropout "h.0.drop1" %l <p = 0.1, training> seed %seed offset_base %base {lamina.module = "h.0.drop1"} : tensor<4x8xf32>
  %q = lamina.dropout "h.0.drop2" %p <p = 0.1, training, offset = 1> seed %seed offset_base %base {lamina.module = "h.0.drop2"} : tensor<4x8xf32>
  %h = arith.addf %x, %q {lamina.module = "h.0"} : tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}

// -----

// An offset base that is not a constant stays an operand; functions that
// are no block are left alone.

// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[SEED:[a-z0-9]+]]: i64, %[[BASE:[a-z0-9]+]]: i64)
// CHECK: %[[D:.+]] = lamina.dropout %[[X]] <p = 0.1, training, offset = 2> seed %[[SEED]] offset_base %[[BASE]]
// CHECK: %[[Y:.+]] = call @helper(%[[D]])
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func private @helper(
func.func @dynamic(%x: tensor<4x8xf32>, %seed: i64, %base: i64) -> tensor<4x8xf32> {
  %d = func.call @d_block(%x, %seed, %base) : (tensor<4x8xf32>, i64, i64) -> tensor<4x8xf32>
  %y = func.call @helper(%d) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func private @d_block(%x: tensor<4x8xf32>, %seed: i64, %base: i64) -> tensor<4x8xf32>
    attributes {lamina.block = "d"} {
  %d = lamina.dropout %x <p = 0.1, training, offset = 2> seed %seed offset_base %base : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}
func.func private @helper(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// A layer's dropout epilogue gets the call's base too.

// CHECK-LABEL: func.func @layer(
// CHECK: lamina.linear_dropout "h.3.fc" {{.+}} dropout <p = 0.1, training, offset = 7> seed %{{[a-z0-9]+}} :
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %seed: i64) -> tensor<4x8xf32> {
  %c5 = arith.constant 5 : i64
  %h = func.call @h_block(%x, %w, %b, %seed, %c5) {lamina.module = "h.3"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, i64, i64) -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}
func.func private @h_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %seed: i64, %base: i64) -> tensor<4x8xf32>
    attributes {lamina.block = "h"} {
  %l = lamina.linear_dropout "h.0.fc" %x, %w bias %b dropout <p = 0.1, training, offset = 2> seed %seed offset_base %base : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, i64, i64) -> tensor<4x8xf32>
  return %l : tensor<4x8xf32>
}
