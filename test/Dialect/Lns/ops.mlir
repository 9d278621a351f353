// RUN: lamina-opt %s | lamina-opt | FileCheck %s
// RUN: lamina-opt %s --mlir-print-op-generic | lamina-opt | FileCheck %s

!f10 = !lns.num<f = 10>
!f23 = !lns.num<f = 23>

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !lns.num<f = 23>, !lns.num<b = 1.5>, !lns.num<b = 2.0>, !lns.num<f = 0>, !lns.num<f = 52>
func.func private @types(!lns.num<f = 23>, !lns.num<b = 1.5>, !lns.num<b = 2.0>, !lns.num<f = 0>, !lns.num<f = 52>)

// CHECK-LABEL: func.func @conversions
func.func @conversions(%x: tensor<4xf64>, %y: f32) -> (tensor<4xf64>, !lns.num<b = 1.5>, tensor<4x!lns.num<f = 12>>) {
  // CHECK: %[[E:.+]] = lns.encode %{{.*}} : tensor<4xf64> -> tensor<4x!lns.num<f = 10>>
  %0 = lns.encode %x : tensor<4xf64> -> tensor<4x!f10>
  // CHECK: lns.decode %[[E]] : tensor<4x!lns.num<f = 10>> -> tensor<4xf64>
  %1 = lns.decode %0 : tensor<4x!f10> -> tensor<4xf64>
  // CHECK: lns.encode %{{.*}} : f32 -> !lns.num<b = 1.5>
  %2 = lns.encode %y : f32 -> !lns.num<b = 1.5>
  // CHECK: lns.change_base %[[E]] : tensor<4x!lns.num<f = 10>> -> tensor<4x!lns.num<f = 12>>
  %3 = lns.change_base %0 : tensor<4x!f10> -> tensor<4x!lns.num<f = 12>>
  return %1, %2, %3 : tensor<4xf64>, !lns.num<b = 1.5>, tensor<4x!lns.num<f = 12>>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (!f10, tensor<2x!f10>) {
  // CHECK: lns.constant 0 : i64 -> !lns.num<f = 10>
  %0 = lns.constant 0 : i64 -> !f10
  // CHECK: lns.constant dense<[2, -9007199254740991]> : tensor<2xi64> -> tensor<2x!lns.num<f = 10>>
  %1 = lns.constant dense<[2, -9007199254740991]> : tensor<2xi64> -> tensor<2x!f10>
  return %0, %1 : !f10, tensor<2x!f10>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<8x!f23>, %b: tensor<8x!f23>, %c: tensor<8x!lns.num<f = 16>>) -> tensor<8x!f23> {
  // CHECK: lns.mul %{{.*}}, %{{.*}} : tensor<8x!lns.num<f = 23>>, tensor<8x!lns.num<f = 23>>
  %0 = lns.mul %a, %b : tensor<8x!f23>, tensor<8x!f23>
  // CHECK: lns.div %{{.*}}, %{{.*}} : tensor<8x!lns.num<f = 23>>, tensor<8x!lns.num<f = 16>>
  %1 = lns.div %0, %c : tensor<8x!f23>, tensor<8x!lns.num<f = 16>>
  // CHECK: lns.add %{{.*}}, %{{.*}} : tensor<8x!lns.num<f = 23>>, tensor<8x!lns.num<f = 23>>
  %2 = lns.add %1, %b : tensor<8x!f23>, tensor<8x!f23>
  // CHECK: lns.sub %{{.*}}, %{{.*}} : tensor<8x!lns.num<f = 23>>, tensor<8x!lns.num<f = 16>>
  %3 = lns.sub %2, %c : tensor<8x!f23>, tensor<8x!lns.num<f = 16>>
  // CHECK: lns.neg %{{.*}} : tensor<8x!lns.num<f = 23>>
  %4 = lns.neg %3 : tensor<8x!f23>
  // CHECK: lns.abs %{{.*}} : tensor<8x!lns.num<f = 23>>
  %5 = lns.abs %4 : tensor<8x!f23>
  // CHECK: lns.sqrt %{{.*}} : tensor<8x!lns.num<f = 23>>
  %6 = lns.sqrt %5 : tensor<8x!f23>
  // CHECK: lns.powi %{{.*}}, -3 : tensor<8x!lns.num<f = 23>>
  %7 = lns.powi %6, -3 : tensor<8x!f23>
  return %7 : tensor<8x!f23>
}

// CHECK-LABEL: func.func @table_mode
func.func @table_mode(%a: !f10, %b: !f10) -> (!f10, !f10) {
  // CHECK: lns.add %{{.*}}, %{{.*}} sbdb table : !lns.num<f = 10>, !lns.num<f = 10>
  %0 = lns.add %a, %b sbdb table : !f10, !f10
  // CHECK: lns.sub %{{.*}}, %{{.*}} sbdb table : !lns.num<f = 10>, !lns.num<f = 10>
  %1 = lns.sub %a, %b sbdb table : !f10, !f10
  return %0, %1 : !f10, !f10
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<16x48x!f10>, %a: tensor<2x4x8x!f10>, %b: tensor<8x3x!lns.num<f = 12>>) -> (tensor<16x!f10>, !f10, tensor<2x4x3x!f10>) {
  // CHECK: lns.sum %{{.*}} dims [1] : tensor<16x48x!lns.num<f = 10>> -> tensor<16x!lns.num<f = 10>>
  %0 = lns.sum %x dims [1] : tensor<16x48x!f10> -> tensor<16x!f10>
  // CHECK: lns.sum %{{.*}} dims [0, 1] order pairwise sbdb table : tensor<16x48x!lns.num<f = 10>> -> !lns.num<f = 10>
  %1 = lns.sum %x dims [0, 1] order pairwise sbdb table : tensor<16x48x!f10> -> !f10
  // CHECK: lns.matmul %{{.*}}, %{{.*}} : tensor<2x4x8x!lns.num<f = 10>>, tensor<8x3x!lns.num<f = 12>> -> tensor<2x4x3x!lns.num<f = 10>>
  %2 = lns.matmul %a, %b : tensor<2x4x8x!f10>, tensor<8x3x!lns.num<f = 12>> -> tensor<2x4x3x!f10>
  return %0, %1, %2 : tensor<16x!f10>, !f10, tensor<2x4x3x!f10>
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<2x5x17x!f10>, %w: tensor<6x17x!f10>, %b: tensor<6x!lns.num<f = 12>>) -> (tensor<2x5x6x!f10>, tensor<2x5x6x!f10>) {
  // CHECK: lns.linear %{{.*}}, %{{.*}} bias %{{.*}} : tensor<2x5x17x!lns.num<f = 10>>, tensor<6x17x!lns.num<f = 10>>, tensor<6x!lns.num<f = 12>> -> tensor<2x5x6x!lns.num<f = 10>>
  %0 = lns.linear %x, %w bias %b : tensor<2x5x17x!f10>, tensor<6x17x!f10>, tensor<6x!lns.num<f = 12>> -> tensor<2x5x6x!f10>
  // CHECK: lns.linear %{{.*}}, %{{.*}} sbdb table : tensor<2x5x17x!lns.num<f = 10>>, tensor<6x17x!lns.num<f = 10>> -> tensor<2x5x6x!lns.num<f = 10>>
  %1 = lns.linear %x, %w sbdb table : tensor<2x5x17x!f10>, tensor<6x17x!f10> -> tensor<2x5x6x!f10>
  return %0, %1 : tensor<2x5x6x!f10>, tensor<2x5x6x!f10>
}

// CHECK-LABEL: func.func @training_ops
func.func @training_ops(%x: tensor<4x!f10>, %y: tensor<4x!lns.num<f = 12>>, %g: tensor<4x!f10>) -> (tensor<4xi1>, i1, tensor<4x!f10>, tensor<4x!f10>, tensor<4x!f10>, tensor<4x!f10>) {
  // CHECK: lns.cmp gt, %{{.*}}, %{{.*}} : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 12>> -> tensor<4xi1>
  %0 = lns.cmp gt, %x, %y : tensor<4x!f10>, tensor<4x!lns.num<f = 12>> -> tensor<4xi1>
  %s = lns.constant 0 : i64 -> !f10
  // CHECK: lns.cmp eq, %{{.*}}, %{{.*}} : !lns.num<f = 10>, !lns.num<f = 10> -> i1
  %1 = lns.cmp eq, %s, %s : !f10, !f10 -> i1
  // CHECK: lns.max %{{.*}}, %{{.*}} : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 12>>
  %2 = lns.max %x, %y : tensor<4x!f10>, tensor<4x!lns.num<f = 12>>
  // CHECK: lns.min %{{.*}}, %{{.*}} : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>>
  %3 = lns.min %x, %g : tensor<4x!f10>, tensor<4x!f10>
  // CHECK: %[[R:.+]] = lns.relu %{{.*}} : tensor<4x!lns.num<f = 10>>
  %4 = lns.relu %x : tensor<4x!f10>
  // CHECK: lns.relu_grad %{{.*}}, %[[R]] : tensor<4x!lns.num<f = 10>>
  %5 = lns.relu_grad %g, %4 : tensor<4x!f10>
  return %0, %1, %2, %3, %4, %5 : tensor<4xi1>, i1, tensor<4x!f10>, tensor<4x!f10>, tensor<4x!f10>, tensor<4x!f10>
}
