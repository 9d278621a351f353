// RUN: lamina-opt %s --lamina-approximate-math | FileCheck %s

// CHECK-LABEL: func.func @tanh_erf_exp
func.func @tanh_erf_exp(%x: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>) {
  // No libm calls remain: only arithmetic on vectors.
  // CHECK-NOT: math.tanh
  // CHECK-NOT: math.erf
  // CHECK-NOT: math.exp
  // CHECK: math.fma
  %0 = math.tanh %x : vector<8xf32>
  %1 = math.erf %x : vector<8xf32>
  %2 = math.exp %x : vector<8xf32>
  return %0, %1, %2 : vector<8xf32>, vector<8xf32>, vector<8xf32>
}

// CHECK-LABEL: func.func @other_math_kept
func.func @other_math_kept(%x: f32) -> f32 {
  // CHECK: math.log
  %0 = math.log %x : f32
  return %0 : f32
}
