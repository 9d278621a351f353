// RUN: lamina-opt %s --lamina-deduplicate-functions --split-input-file | FileCheck %s

// Two layers' copies of the same loop nest, which differ only in their
// names and in the module paths their ops carry: the first stays, the
// calls of the second call it, and the second is erased. A nest of other
// shapes stays, and so does a public function like them.
// CHECK-LABEL: func.func private @f_nest0(
// CHECK: memref.load
// CHECK-NOT: lamina.module
// CHECK-NOT: func.func private @f_nest1(
// CHECK: func.func private @f_nest2(
// CHECK-SAME: memref<32xf32>
// CHECK: func.func @g(
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[A:.+]]: memref<64xf32>, %[[B:.+]]: memref<64xf32>, %[[C:.+]]: memref<32xf32>)
// CHECK: call @f_nest0(%[[A]]) : (memref<64xf32>) -> ()
// CHECK-NEXT: call @f_nest0(%[[B]]) : (memref<64xf32>) -> ()
// CHECK-NEXT: call @f_nest2(%[[C]]) : (memref<32xf32>) -> ()
// CHECK-NEXT: call @g(%[[A]]) : (memref<64xf32>) -> ()
func.func private @f_nest0(%a: memref<64xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] {lamina.module = "h.0.mlp"} : memref<64xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %a[%c0] : memref<64xf32>
  return
}
func.func private @f_nest1(%a: memref<64xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] {lamina.module = "h.1.mlp"} : memref<64xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %a[%c0] : memref<64xf32>
  return
}
func.func private @f_nest2(%a: memref<32xf32>) attributes {passthrough = ["noinline"]} {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<32xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %a[%c0] : memref<32xf32>
  return
}
func.func @g(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<64xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %a[%c0] : memref<64xf32>
  return
}
func.func @f(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<32xf32>) {
  call @f_nest0(%a) : (memref<64xf32>) -> ()
  call @f_nest1(%b) : (memref<64xf32>) -> ()
  call @f_nest2(%c) : (memref<32xf32>) -> ()
  call @g(%a) : (memref<64xf32>) -> ()
  return
}

// -----

// Nests that differ in an op (addf, mulf) both stay.
// CHECK-LABEL: func.func private @h_nest0(
// CHECK: arith.addf
// CHECK-LABEL: func.func private @h_nest1(
// CHECK: arith.mulf
// CHECK-LABEL: func.func @h(
// CHECK: call @h_nest0
// CHECK: call @h_nest1
func.func private @h_nest0(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<64xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %a[%c0] : memref<64xf32>
  return
}
func.func private @h_nest1(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<64xf32>
  %w = arith.mulf %v, %v : f32
  memref.store %w, %a[%c0] : memref<64xf32>
  return
}
func.func @h(%a: memref<64xf32>) {
  call @h_nest0(%a) : (memref<64xf32>) -> ()
  call @h_nest1(%a) : (memref<64xf32>) -> ()
  return
}
