// RUN: lamina-opt %s -canonicalize -split-input-file | FileCheck %s

// Expected codes below are derived by hand from the spec's definitions.
// Z = -(2^53) | 1 = -9007199254740991; -(2^53) = -9007199254740992 is the
// other zero code.

!f10 = !lns.num<f = 10>

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.+]]: tensor<4x!lns.num<f = 10>>)
func.func @neg_neg(%x: tensor<4x!f10>) -> tensor<4x!f10> {
  // (p ^ 1) ^ 1 = p for every code, including both zeros.
  // CHECK-NOT: lns.neg
  // CHECK: return %[[X]]
  %0 = lns.neg %x : tensor<4x!f10>
  %1 = lns.neg %0 : tensor<4x!f10>
  return %1 : tensor<4x!f10>
}

// -----

!f10 = !lns.num<f = 10>

// CHECK-LABEL: func.func @abs_folds
// CHECK-SAME: (%[[X:.+]]: tensor<4x!lns.num<f = 10>>)
func.func @abs_folds(%x: tensor<4x!f10>) -> (tensor<4x!f10>, tensor<4x!f10>) {
  // CHECK: %[[A:.+]] = lns.abs %[[X]]
  // CHECK-NOT: lns.neg
  // CHECK: %[[B:.+]] = lns.abs %[[X]]
  // CHECK: return %[[A]], %[[B]]
  %0 = lns.abs %x : tensor<4x!f10>
  %1 = lns.abs %0 : tensor<4x!f10>
  %2 = lns.neg %x : tensor<4x!f10>
  %3 = lns.abs %2 : tensor<4x!f10>
  return %1, %3 : tensor<4x!f10>, tensor<4x!f10>
}

// -----

!f10 = !lns.num<f = 10>

// CHECK-LABEL: func.func @not_identities
// CHECK-SAME: (%[[X:.+]]: tensor<2x!lns.num<f = 10>>)
func.func @not_identities(%x: tensor<2x!f10>) -> (tensor<2x!f10>, tensor<2x!f10>, tensor<2x!f10>) {
  // mul by one (code 0) maps the zero code -2^53 to Z, so it is not x;
  // neither is powi 1, nor a change to the same base.
  // CHECK: lns.mul %[[X]]
  // CHECK: lns.powi %[[X]], 1
  // CHECK: lns.change_base %[[X]]
  %one = lns.constant dense<0> : tensor<2xi64> -> tensor<2x!f10>
  %0 = lns.mul %x, %one : tensor<2x!f10>, tensor<2x!f10>
  %1 = lns.powi %x, 1 : tensor<2x!f10>
  %2 = lns.change_base %x : tensor<2x!f10> -> tensor<2x!f10>
  return %0, %1, %2 : tensor<2x!f10>, tensor<2x!f10>, tensor<2x!f10>
}

// -----

!f10 = !lns.num<f = 10>

// CHECK-LABEL: func.func @fold_constants
func.func @fold_constants() -> (tensor<5x!f10>, tensor<5x!f10>, tensor<6x!f10>, tensor<4x!f10>, tensor<4x!f10>) {
  %a = lns.constant dense<[-9007199254740991, -9007199254740992, 0, 3, -8]> : tensor<5xi64> -> tensor<5x!f10>
  // neg flips the sign bit of every code: Z <-> -2^53.
  // CHECK-DAG: lns.constant dense<[-9007199254740992, -9007199254740991, 1, 2, -7]> : tensor<5xi64>
  %neg = lns.neg %a : tensor<5x!f10>
  %b = lns.constant dense<[-9007199254740991, -9007199254740992, 1, 5, -7]> : tensor<5xi64> -> tensor<5x!f10>
  // abs: both zeros -> Z; 1 (-1) -> 0 (+1); 5 (e=2, -) -> 4; -7 (e=-4, -) -> -8.
  // CHECK-DAG: lns.constant dense<[-9007199254740991, -9007199254740991, 0, 4, -8]> : tensor<5xi64>
  %abs = lns.abs %b : tensor<5x!f10>
  %c = lns.constant dense<[-9007199254740991, -9007199254740992, 8, 6, -6, 7]> : tensor<6xi64> -> tensor<6x!f10>
  // sqrt: e -> floor(e/2), sign dropped: 4 -> 2, 3 -> 1, -3 -> -2, 3 (neg) -> 1.
  // CHECK-DAG: lns.constant dense<[-9007199254740991, -9007199254740991, 4, 2, -4, 2]> : tensor<6xi64>
  %sqrt = lns.sqrt %c : tensor<6x!f10>
  %d = lns.constant dense<[-9007199254740991, -9007199254740992, 3, 4]> : tensor<4xi64> -> tensor<4x!f10>
  // powi 3: e=1 (neg) -> e=3 (neg) = 7; e=2 -> e=6 = 12.
  // CHECK-DAG: lns.constant dense<[-9007199254740991, -9007199254740991, 7, 12]> : tensor<4xi64>
  %pow = lns.powi %d, 3 : tensor<4x!f10>
  // mul: zero operands give Z; (e=1,-)·(e=2,-) = (e=3,+) = 6; (e=2,-)·(e=2,-) = 8.
  %x = lns.constant dense<[-9007199254740991, 4, 3, 5]> : tensor<4xi64> -> tensor<4x!f10>
  %y = lns.constant dense<[4, -9007199254740992, 5, 5]> : tensor<4xi64> -> tensor<4x!f10>
  // CHECK-DAG: lns.constant dense<[-9007199254740991, -9007199254740991, 6, 8]> : tensor<4xi64>
  %mul = lns.mul %x, %y : tensor<4x!f10>, tensor<4x!f10>
  return %neg, %abs, %sqrt, %pow, %mul : tensor<5x!f10>, tensor<5x!f10>, tensor<6x!f10>, tensor<4x!f10>, tensor<4x!f10>
}

// -----

!f10 = !lns.num<f = 10>

// CHECK-LABEL: func.func @fold_div
func.func @fold_div() -> !f10 {
  // (e=4, -) / (e=2, -) = (e=2, +) = 4.
  // CHECK: %[[C:.+]] = lns.constant 4 : i64 -> !lns.num<f = 10>
  // CHECK: return %[[C]]
  %x = lns.constant 9 : i64 -> !f10
  %y = lns.constant 5 : i64 -> !f10
  %0 = lns.div %x, %y : !f10, !f10
  return %0 : !f10
}

// -----

// CHECK-LABEL: func.func @no_fold_across_bases
func.func @no_fold_across_bases() -> !lns.num<f = 10> {
  // A base change rounds in double; it is left to the compiled code.
  // CHECK: lns.mul
  %x = lns.constant 9 : i64 -> !lns.num<f = 10>
  %y = lns.constant 5 : i64 -> !lns.num<f = 12>
  %0 = lns.mul %x, %y : !lns.num<f = 10>, !lns.num<f = 12>
  return %0 : !lns.num<f = 10>
}

// -----

!f23 = !lns.num<f = 23>

// CHECK-LABEL: func.func @sub_is_add_neg
// CHECK-SAME: (%[[X:.+]]: !lns.num<f = 23>, %[[Y:.+]]: !lns.num<f = 23>)
func.func @sub_is_add_neg(%x: !f23, %y: !f23) -> !f23 {
  // CHECK: %[[N:.+]] = lns.neg %[[Y]]
  // CHECK: lns.add %[[X]], %[[N]] : !lns.num<f = 23>, !lns.num<f = 23>
  %0 = lns.sub %x, %y : !f23, !f23
  return %0 : !f23
}
