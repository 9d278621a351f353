// RUN: lamina-opt %s --lamina-autocast --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-autocast="element=f16" --split-input-file | FileCheck %s --check-prefix=F16

// Two layers and a residual add: each layer's f32 operands are truncated
// to bf16, its result rounded to bf16 and widened back to f32; between the
// layers the widening and the next truncation fold away; the add (an op
// torch.autocast leaves alone) computes in f32. The dropout seed (i64) is
// not a float.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W1:.+]]: tensor<16x8xf32>, %[[B1:.+]]: tensor<16xf32>, %[[W2:.+]]: tensor<8x16xf32>, %[[SEED:.+]]: i64)
// CHECK-DAG: %[[XB:.+]] = arith.truncf %[[X]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-DAG: %[[W1B:.+]] = arith.truncf %[[W1]] : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-DAG: %[[B1B:.+]] = arith.truncf %[[B1]] : tensor<16xf32> to tensor<16xbf16>
// CHECK-DAG: %[[W2B:.+]] = arith.truncf %[[W2]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK: %[[H:.+]] = lamina.linear_dropout "fc1" %[[XB]], %[[W1B]] bias %[[B1B]] dropout <p = 0.1, training> seed %[[SEED]] : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>, i64) -> tensor<4x16xbf16>
// CHECK: %[[Y:.+]] = lamina.linear "fc2" %[[H]], %[[W2B]] : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[YF:.+]] = arith.extf %[[Y]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[R:.+]] = arith.addf %[[YF]], %[[X]] : tensor<4x8xf32>
// CHECK: return %[[R]]
// F16-LABEL: func.func @mlp
// F16: lamina.linear_dropout "fc1" {{.*}} -> tensor<4x16xf16>
// F16: lamina.linear "fc2" {{.*}} -> tensor<4x8xf16>
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %seed: i64) -> tensor<4x8xf32> {
  %h = lamina.linear_dropout "fc1" %x, %w1 bias %b1 dropout <p = 0.1, training> seed %seed : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  %y = lamina.linear "fc2" %h, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r = arith.addf %y, %x : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// fused_qkv's three results and a lamina.matmul are lower-precision ops
// too; the softmax between them (an fp32 op) reads the widened scores.
// One truncation of x serves both.
// CHECK-LABEL: func.func @attention_projections
// CHECK: %[[XB:.+]] = arith.truncf %{{.+}} : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK-NOT: arith.truncf %{{.+}} : tensor<2x8xf32>
// CHECK: %[[Q:[^,]+]], %[[K:[^,]+]], %[[V:[^ ]+]] = lamina.fused_qkv "qkv" %[[XB]], {{.*}} -> (tensor<2x2x4xbf16>, tensor<2x2x4xbf16>, tensor<2x2x4xbf16>)
// CHECK-DAG: arith.extf %[[Q]] : tensor<2x2x4xbf16> to tensor<2x2x4xf32>
// CHECK-DAG: arith.extf %[[K]] : tensor<2x2x4xbf16> to tensor<2x2x4xf32>
// CHECK-DAG: arith.extf %[[V]] : tensor<2x2x4xbf16> to tensor<2x2x4xf32>
// CHECK: %[[M:.+]] = lamina.matmul "proj" %[[XB]], %{{.+}} : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
// CHECK: %[[MF:.+]] = arith.extf %[[M]]
// CHECK: lamina.softmax %[[MF]]
func.func @attention_projections(%x: tensor<2x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>, %wp: tensor<8x8xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x8xf32>) {
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 2 world_size 1
      : (tensor<2x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  %m = lamina.matmul "proj" %x, %wp : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %s = lamina.softmax %m dim 1 : tensor<2x8xf32>
  return %q, %k, %v, %s : tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x8xf32>
}

// -----

// Attention's plain matmuls (torch.matmul: linalg.batch_matmul, and
// linalg.matmul in 2-D) are lower-precision ops too: they compute in f32 on
// operands rounded to bf16 and widened back (the projections' results
// already are), and their results are rounded to bf16 and widened for the
// softmax after them.
// CHECK-LABEL: func.func @attention_scores
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>, %[[W:.+]]: tensor<24x8xf32>, %[[BIAS:.+]]: tensor<24xf32>, %[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8x3xf32>)
// CHECK-DAG: %[[AB:.+]] = arith.truncf %[[A]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-DAG: %[[AR:.+]] = arith.extf %[[AB]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-DAG: %[[BB:.+]] = arith.truncf %[[B]] : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK-DAG: %[[BR:.+]] = arith.extf %[[BB]] : tensor<8x3xbf16> to tensor<8x3xf32>
// CHECK: %[[Q:[^,]+]], %[[K:[^,]+]], %{{[^ ]+}} = lamina.fused_qkv "qkv" {{.*}} -> (tensor<2x2x4xbf16>, tensor<2x2x4xbf16>, tensor<2x2x4xbf16>)
// CHECK-DAG: %[[QR:.+]] = arith.extf %[[Q]] : tensor<2x2x4xbf16> to tensor<2x2x4xf32>
// CHECK-DAG: %[[KR:.+]] = arith.extf %[[K]] : tensor<2x2x4xbf16> to tensor<2x2x4xf32>
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[KR]] : tensor<2x2x4xf32>)
// CHECK: %[[KTB:.+]] = arith.truncf %[[KT]] : tensor<2x4x2xf32> to tensor<2x4x2xbf16>
// CHECK: %[[KTR:.+]] = arith.extf %[[KTB]] : tensor<2x4x2xbf16> to tensor<2x4x2xf32>
// CHECK: %[[S:.+]] = linalg.batch_matmul ins(%[[QR]], %[[KTR]] : tensor<2x2x4xf32>, tensor<2x4x2xf32>) outs(%{{.+}} : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
// CHECK: %[[SB:.+]] = arith.truncf %[[S]] : tensor<2x2x2xf32> to tensor<2x2x2xbf16>
// CHECK: %[[SF:.+]] = arith.extf %[[SB]] : tensor<2x2x2xbf16> to tensor<2x2x2xf32>
// CHECK: lamina.softmax %[[SF]]
// CHECK: %[[M:.+]] = linalg.matmul ins(%[[AR]], %[[BR]] : tensor<4x8xf32>, tensor<8x3xf32>) outs(%{{.+}} : tensor<4x3xf32>)
// CHECK: %[[MB:.+]] = arith.truncf %[[M]] : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[MF:.+]] = arith.extf %[[MB]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK: return %{{.+}}, %[[MF]]
func.func @attention_scores(%x: tensor<2x8xf32>, %w: tensor<24x8xf32>, %bias: tensor<24xf32>, %a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> (tensor<2x2x2xf32>, tensor<4x3xf32>) {
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %bias num_heads 2 world_size 1
      : (tensor<2x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  %empty = tensor.empty() : tensor<2x4x2xf32>
  %kt = linalg.transpose ins(%k : tensor<2x2x4xf32>) outs(%empty : tensor<2x4x2xf32>) permutation = [0, 2, 1]
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x2x4xf32>, tensor<2x4x2xf32>) outs(%init : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %p = lamina.softmax %s dim 2 : tensor<2x2x2xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%init2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %p, %m : tensor<2x2x2xf32>, tensor<4x3xf32>
}

// -----

// Layers already in bf16 and LNS layers are left as they are.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: return
func.func @untouched(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %lx: tensor<4x8x!lns.num<f = 10>>, %lw: tensor<16x8x!lns.num<f = 10>>) -> (tensor<4x16xbf16>, tensor<4x16x!lns.num<f = 10>>) {
  %y = lamina.linear "a" %x, %w : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xbf16>
  %l = lamina.linear "b" %lx, %lw : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  return %y, %l : tensor<4x16xbf16>, tensor<4x16x!lns.num<f = 10>>
}
