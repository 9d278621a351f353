// RUN: lamina-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @dropout_identity
// CHECK-SAME: (%[[X:.+]]: tensor<4x16xf32>, %[[S:.+]]: i64)
func.func @dropout_identity(%x: tensor<4x16xf32>, %seed: i64) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // p = 0 in training and any p in eval mode keep every element unscaled.
  // CHECK-NOT: lamina.dropout
  // CHECK: return %[[X]], %[[X]]
  %0 = lamina.dropout %x <p = 0.0, training> seed %seed : tensor<4x16xf32>
  %1 = lamina.dropout %x <p = 0.5> seed %seed : tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_all
func.func @dropout_all(%x: tensor<4x16xf32>, %seed: i64) -> tensor<4x16xf32> {
  // CHECK: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<4x16xf32>
  // CHECK-NOT: lamina.dropout
  // CHECK: return %[[Z]]
  %0 = lamina.dropout %x <p = 1.0, training> seed %seed : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_active_kept
func.func @dropout_active_kept(%x: tensor<4x16xf32>, %seed: i64) -> tensor<4x16xf32> {
  // CHECK: lamina.dropout %{{.*}} <p = 0.5, training> seed
  %0 = lamina.dropout %x <p = 0.5, training> seed %seed : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @relu_idempotent
func.func @relu_idempotent(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: %[[R:.+]] = lamina.activation relu
  // CHECK-NEXT: %[[G:.+]] = lamina.activation gelu_tanh %[[R]]
  // CHECK-NEXT: %[[GG:.+]] = lamina.activation gelu_tanh %[[G]]
  // CHECK-NEXT: return %[[R]], %[[GG]]
  %0 = lamina.activation relu %x : tensor<4x16xf32>
  %1 = lamina.activation relu %0 : tensor<4x16xf32>
  // gelu is not idempotent.
  %2 = lamina.activation gelu_tanh %1 : tensor<4x16xf32>
  %3 = lamina.activation gelu_tanh %2 : tensor<4x16xf32>
  return %1, %3 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @linear_sync_without_sync
func.func @linear_sync_without_sync(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: lamina.linear "a" %{{.*}}, %{{.*}} bias %{{.*}} :
  // CHECK: lamina.linear_sync "b" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} :
  %0 = lamina.linear_sync "a" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = lamina.linear_sync "b" %x, %w sync <fwd_post, all_reduce> bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @linear_dropout_eval
func.func @linear_dropout_eval(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %seed: i64) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: lamina.linear "eval" %{{.*}}, %{{.*}} bias %{{.*}} :
  %0 = lamina.linear_dropout "eval" %x, %w bias %b dropout <p = 0.1> : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: lamina.linear_sync "synced" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} :
  %1 = lamina.linear_dropout "synced" %x, %w sync <fwd_post, all_reduce> bias %b dropout <p = 0.0, training> seed %seed : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  // CHECK: lamina.linear_dropout "train" %{{.*}}, %{{.*}} bias %{{.*}} dropout <p = 0.1, training> seed
  %2 = lamina.linear_dropout "train" %x, %w bias %b dropout <p = 0.1, training> seed %seed : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  return %0, %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @fused_inactive_dropout
func.func @fused_inactive_dropout(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %seed: i64) -> tensor<4x16xf32> {
  // CHECK: lamina.fused_linear "f" %{{.*}}, %{{.*}} bias %{{.*}} activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %0 = lamina.fused_linear "f" %x, %w bias %b activation gelu_tanh dropout <p = 0.3> seed %seed : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
