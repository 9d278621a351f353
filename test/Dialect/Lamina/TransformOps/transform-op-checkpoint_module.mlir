// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// A block: the function computing part of it records the module; the
// forward computation is unchanged. Its layers are found by path, the ops
// between them by lamina.module; a second checkpoint of the same module
// records it once.
// CHECK-LABEL: func.func @block
// CHECK-SAME: attributes {lamina.checkpoint_modules = ["h.0", "h.1.mlp"]}
// CHECK: arith.mulf %{{.*}}, %{{.*}} {lamina.module = "h.0.norm"}
// CHECK-NOT: lamina.checkpoint}
// CHECK: return
// CHECK-LABEL: func.func @elsewhere
// CHECK-NOT: lamina.checkpoint_modules
func.func @block(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %w2: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %n = arith.mulf %x, %x {lamina.module = "h.0.norm"} : tensor<4x8xf32>
  %0 = lamina.linear "h.0.fc" %n, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = lamina.linear "h.1.mlp.fc" %0, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func @elsewhere(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %x, %x {lamina.module = "h.10"} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    transform.lamina.checkpoint_module %root "h.0" : !transform.any_op
    transform.lamina.checkpoint_module %root "h.1.mlp" : !transform.any_op
    transform.lamina.checkpoint_module %root "h.0" : !transform.any_op
    transform.yield
  }
}

// -----

// "h.1" is not a prefix of "h.10"'s path: no op of it.
func.func @no_such_module(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = arith.addf %x, %x {lamina.module = "h.10"} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    // expected-error @+1 {{no op of module 'h.1': neither a layer path nor an op's lamina.module is in it}}
    transform.lamina.checkpoint_module %root "h.1" : !transform.any_op
    transform.yield
  }
}
