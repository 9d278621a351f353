// RUN: lamina-opt %s --convert-lns-to-arith --split-input-file | FileCheck %s

// Scalars: codes are i64 across the signature; mul is integer arithmetic
// with the zero rule (Z = -9007199254740991).
// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[X:.+]]: i64, %[[Y:.+]]: i64) -> i64
func.func @mul(%x: !lns.num<f = 10>, %y: !lns.num<f = 10>) -> !lns.num<f = 10> {
  // CHECK: %[[S:.+]] = arith.andi %[[Y]], %{{.*}} : i64
  // CHECK: %[[SUM:.+]] = arith.addi %[[X]], %[[Y]] : i64
  // CHECK: %[[D:.+]] = arith.subi %[[SUM]], %[[S]] : i64
  // CHECK: %[[P:.+]] = arith.xori %[[D]], %[[S]] : i64
  // CHECK: arith.select %{{.*}}, %c-9007199254740991_i64{{.*}}, %[[P]] : i64
  // CHECK-NOT: lns.
  %0 = lns.mul %x, %y : !lns.num<f = 10>, !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

// Addition evaluates sbdb in double with pow and log, divides by log b
// (here f = 10: log(2^(2^-10)) = 6.7690377e-4) and rounds half to even.
// CHECK-LABEL: func.func @add
func.func @add(%x: tensor<8x!lns.num<f = 10>>, %y: tensor<8x!lns.num<f = 10>>) -> tensor<8x!lns.num<f = 10>> {
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8xi64>, tensor<8xi64>) outs(%{{.*}} : tensor<8xi64>)
  // CHECK: arith.minsi
  // CHECK: math.powf %{{.*}}, %{{.*}} : f64
  // CHECK: arith.addf
  // CHECK: math.absf
  // CHECK: math.log
  // CHECK: arith.divf %{{.*}}, %{{.*}} : f64
  // CHECK: math.roundeven
  // CHECK: arith.fptosi
  // CHECK: arith.maxsi
  %0 = lns.add %x, %y : tensor<8x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>>
  return %0 : tensor<8x!lns.num<f = 10>>
}

// -----

// The reduction runs as one scf.for per output element: the sequential
// order of the reference, never reassociated.
// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<4x17x!lns.num<f = 10>>, %w: tensor<6x17x!lns.num<f = 12>>) -> tensor<4x6x!lns.num<f = 10>> {
  // The f = 12 weight is converted to f = 10 once, element-wise.
  // CHECK: linalg.generic
  // CHECK: math.roundeven
  // CHECK: tensor.generate
  // CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %c-9007199254740991_i64) -> (i64)
  // CHECK: tensor.extract
  // CHECK: tensor.extract
  // CHECK: math.powf
  // CHECK: scf.yield
  // CHECK: tensor.yield
  %0 = lns.linear %x, %w : tensor<4x17x!lns.num<f = 10>>, tensor<6x17x!lns.num<f = 12>> -> tensor<4x6x!lns.num<f = 10>>
  return %0 : tensor<4x6x!lns.num<f = 10>>
}

// -----

// Ops that only carry LNS values get converted types.
// CHECK-LABEL: func.func @carriers
// CHECK-SAME: (%[[B:.+]]: tensor<6xi64>) -> tensor<4x6xi64>
func.func @carriers(%b: tensor<6x!lns.num<f = 10>>) -> tensor<4x6x!lns.num<f = 10>> {
  // CHECK: %[[E:.+]] = tensor.empty() : tensor<4x6xi64>
  // CHECK: linalg.broadcast ins(%[[B]] : tensor<6xi64>) outs(%[[E]] : tensor<4x6xi64>) dimensions = [0]
  %e = tensor.empty() : tensor<4x6x!lns.num<f = 10>>
  %0 = linalg.broadcast ins(%b : tensor<6x!lns.num<f = 10>>) outs(%e : tensor<4x6x!lns.num<f = 10>>) dimensions = [0]
  return %0 : tensor<4x6x!lns.num<f = 10>>
}
