// RUN: lamina-opt %s --lamina-decompose --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @linear_act
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8xf32>, %[[B:.+]]: tensor<16xf32>)
func.func @linear_act(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[M:.+]] = lamina.matmul "fc" %[[X]], %[[W]] : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: %[[A:.+]] = lamina.bias_add "fc" %[[M]], %[[B]]
  // CHECK: %[[G:.+]] = lamina.activation "fc" gelu_tanh %[[A]]
  // CHECK: return %[[G]]
  // CHECK-NOT: lamina.linear_act
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The sync of a row-parallel layer stays between the matmul and the bias,
// so the bias is added once, after the reduction.
// CHECK-LABEL: func.func @sync_then_dropout
func.func @sync_then_dropout(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: i64) -> tensor<2x4x16xf32> {
  // CHECK: %[[M:.+]] = lamina.matmul "out" %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: %[[S:.+]] = lamina.sync "out" %[[M]] <fwd_post, all_reduce>
  // CHECK: %[[A:.+]] = lamina.bias_add "out" %[[S]], %{{.*}}
  // CHECK: lamina.dropout "out" %[[A]] <p = 0.1, training, offset = 2> seed %{{.*}}
  %0 = lamina.linear_dropout "out" %x, %w sync <fwd_post, all_reduce> bias %b dropout <p = 0.1, training, offset = 2> seed %s : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// nn.Linear without bias is just the matmul; with bias, matmul + bias_add.
// CHECK-LABEL: func.func @plain_linear
func.func @plain_linear(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: %[[M0:.+]] = lamina.matmul "a" {{.*}} -> tensor<4x16xf32>
  // CHECK-NEXT: %[[M1:.+]] = lamina.matmul "b" {{.*}} -> tensor<4x16xf32>
  // CHECK-NEXT: %[[B1:.+]] = lamina.bias_add "b" %[[M1]], %{{.*}} : tensor<4x16xf32>, tensor<16xbf16>
  // CHECK-NEXT: return %[[M0]], %[[B1]]
  %0 = lamina.linear "a" %x, %w : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  %1 = lamina.linear_separate_bias "b" %x, %w bias %b : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A fused op decomposes back into its pieces; fused_qkv is left alone.
// CHECK-LABEL: func.func @fused_and_qkv
func.func @fused_and_qkv(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %wq: tensor<24x8xf32>, %bq: tensor<24xf32>) -> (tensor<4x16xf32>, tensor<4x2x4xf32>) {
  // CHECK: lamina.matmul "f"
  // CHECK-NEXT: lamina.activation "f" relu
  // CHECK-NEXT: lamina.fused_qkv "qkv"
  %0 = lamina.fused_linear "f" %x, %w activation relu : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %wq bias %bq num_heads 2 world_size 1 : (tensor<4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>)
  return %0, %q : tensor<4x16xf32>, tensor<4x2x4xf32>
}
