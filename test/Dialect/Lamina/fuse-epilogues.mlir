// RUN: lamina-opt %s --lamina-fuse-epilogues --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @full_chain
func.func @full_chain(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: i64) -> tensor<4x16xf32> {
  // CHECK: %[[F:.+]] = lamina.fused_linear "fc" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias %{{.*}} activation gelu_tanh dropout <p = 0.1, training> seed %{{.*}} :
  // CHECK-NOT: lamina.matmul
  // CHECK-NOT: lamina.bias_add
  // CHECK-NOT: lamina.activation
  // CHECK-NOT: lamina.dropout
  // CHECK: return %[[F]]
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.sync %0 <fwd_post, all_reduce> : tensor<4x16xf32>
  %2 = lamina.bias_add %1, %b : tensor<4x16xf32>, tensor<16xf32>
  %3 = lamina.activation gelu_tanh %2 : tensor<4x16xf32>
  %4 = lamina.dropout %3 <p = 0.1, training> seed %s : tensor<4x16xf32>
  return %4 : tensor<4x16xf32>
}

// -----

// A value used twice ends the chain: the bias add's result is also
// returned, so the activation stays separate.
// CHECK-LABEL: func.func @shared_value
func.func @shared_value(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: %[[F:.+]] = lamina.fused_linear "fc" %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[A:.+]] = lamina.activation relu %[[F]]
  // CHECK: return %[[F]], %[[A]]
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.bias_add %0, %b : tensor<4x16xf32>, tensor<16xf32>
  %2 = lamina.activation relu %1 : tensor<4x16xf32>
  return %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A matmul result used twice cannot fuse at all.
// CHECK-LABEL: func.func @matmul_used_twice
func.func @matmul_used_twice(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: %[[M:.+]] = lamina.matmul
  // CHECK: lamina.bias_add %[[M]]
  // CHECK-NOT: lamina.fused_linear
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.bias_add %0, %b : tensor<4x16xf32>, tensor<16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Out of order: an activation before the bias ends the chain at the
// matmul (the bias add after it stays separate); a bwd_post sync is not a
// layer sync; a matmul with nothing after it stays a matmul.
// CHECK-LABEL: func.func @out_of_order
func.func @out_of_order(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: %[[F:.+]] = lamina.fused_linear "a" %{{.*}}, %{{.*}} activation relu :
  // CHECK: lamina.bias_add %[[F]]
  %0 = lamina.matmul "a" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.activation relu %0 : tensor<4x16xf32>
  %2 = lamina.bias_add %1, %b : tensor<4x16xf32>, tensor<16xf32>
  // CHECK: %[[M:.+]] = lamina.matmul "b"
  // CHECK: lamina.sync %[[M]] <bwd_post, all_reduce>
  %3 = lamina.matmul "b" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %4 = lamina.sync %3 <bwd_post, all_reduce> : tensor<4x16xf32>
  // CHECK: lamina.matmul "c"
  %5 = lamina.matmul "c" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %2, %4, %5 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The bias is computed after the matmul: the fused op goes where the chain
// ends, after the bias exists.
// CHECK-LABEL: func.func @bias_defined_late
func.func @bias_defined_late(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[B:.+]] = arith.addf
  // CHECK-NEXT: %[[F:.+]] = lamina.fused_linear "fc" %{{.*}}, %{{.*}} bias %[[B]] activation gelu_erf
  // CHECK-NEXT: return %[[F]]
  %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %b = arith.addf %c, %c : tensor<16xf32>
  %2 = lamina.bias_add %0, %b : tensor<4x16xf32>, tensor<16xf32>
  %3 = lamina.activation gelu_erf %2 : tensor<4x16xf32>
  return %3 : tensor<4x16xf32>
}
