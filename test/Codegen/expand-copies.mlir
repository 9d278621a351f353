// RUN: lamina-opt %s --lamina-expand-copies | FileCheck %s

// CHECK-LABEL: func.func @strided_copy
// CHECK-SAME: (%[[A:.+]]: memref<2x4xf32, strided<[12, 3]>>, %[[B:.+]]: memref<2x4xf32>)
func.func @strided_copy(%a: memref<2x4xf32, strided<[12, 3]>>, %b: memref<2x4xf32>) {
  // CHECK-NOT: memref.copy
  // CHECK: linalg.copy ins(%[[A]] : memref<2x4xf32, strided<[12, 3]>>) outs(%[[B]] : memref<2x4xf32>)
  memref.copy %a, %b : memref<2x4xf32, strided<[12, 3]>> to memref<2x4xf32>
  return
}
