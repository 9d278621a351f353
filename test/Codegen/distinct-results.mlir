// RUN: lamina-opt %s --lamina-distinct-results --split-input-file | FileCheck %s
// RUN: lamina-run %s --entry=twice --random-inputs --seed=2 | FileCheck %s --check-prefix=EXEC

// The second return of the same value becomes a copy of it.
// CHECK-LABEL: func.func @twice
// CHECK: %[[Y:.+]] = arith.addf
// CHECK: %[[COPY:.+]] = bufferization.alloc_tensor() copy(%[[Y]]) : tensor<4x8xf32>
// CHECK: return %[[Y]], %[[COPY]]
// Run, both results hold x + x (the same numbers):
// EXEC: result 0: f32[4, 8] min [[MIN:.+]] max [[MAX:.+]] mean
// EXEC: result 1: f32[4, 8] min [[MIN]] max [[MAX]] mean
func.func @twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = arith.addf %x, %x : tensor<4x8xf32>
  return %y, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Distinct results and scalars stay as they are.
// CHECK-LABEL: func.func @distinct
// CHECK-NOT: alloc_tensor
// CHECK: return %arg0, %arg1, %arg2, %arg2
func.func @distinct(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: i64) -> (tensor<4xf32>, tensor<4xf32>, i64, i64) {
  return %x, %y, %s, %s : tensor<4xf32>, tensor<4xf32>, i64, i64
}
