// The pair lamina-generate-backward adds compiles and runs end to end.
// RUN: lamina-opt %s --lamina-generate-backward | lamina-run - --entry=main_backward --random-inputs --seed=2 | FileCheck %s --check-prefix=GRAD
// RUN: lamina-opt %s --lamina-generate-backward | lamina-run - --entry=main_forward --random-inputs --seed=2 | FileCheck %s --check-prefix=FWD

// @main_forward's first result is @main's result (the same seeded inputs:
// the two functions take the same arguments).
// RUN: rm -rf %t && mkdir -p %t
// RUN: lamina-run %s --random-inputs --seed=5 --output-dir=%t
// RUN: lamina-opt %s --lamina-generate-backward | lamina-run - --entry=main_forward --random-inputs --seed=5 --reference=%t/result0.npy | FileCheck %s --check-prefix=SAME

// One gradient per float tensor argument, of its shape, in argument order;
// none for the i64 seed.
// GRAD: result 0: f32[4, 8]
// GRAD-NEXT: result 1: f32[16, 8]
// GRAD-NEXT: result 2: f32[16]
// GRAD-NEXT: result 3: f32[8, 16]
// GRAD-NEXT: result 4: f32[8]
// GRAD-NOT: result 5

// The result, then what the backward needs: fc1's output h (for dW2 =
// dpᵀ·h) and fc1's pre-activation (for gelu'); the dropout saves no mask.
// FWD: result 0: f32[4, 8]
// FWD-NEXT: result 1: f32[4, 16]
// FWD-NEXT: result 2: f32[4, 16]
// FWD-NOT: result 3

// SAME: result 0 vs reference: max abs err 0, {{.*}}: ok

func.func @main(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>, %s: i64) -> tensor<4x8xf32> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = lamina.linear_dropout "fc2" %h, %w2 bias %b2 dropout <p = 0.1, training> seed %s : (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32>, i64) -> tensor<4x8xf32>
  %r = arith.addf %x, %y : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
