// RUN: lamina-opt %s --lamina-outline-loop-nests --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-outline-loop-nests=min-nests=3 --split-input-file | FileCheck %s --check-prefix=FEW

// Each loop nest of the body becomes a private function that LLVM may not
// inline, called in its place: the values it uses from above are its
// arguments (constants are cloned in instead), what it yields its results.
// CHECK-LABEL: func.func private @two_nests_nest0(
// CHECK-SAME: %[[A:.+]]: memref<64xf32>, %[[B:.+]]: memref<64xf32>) attributes {passthrough = ["noinline"]}
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: scf.for %[[I:.+]] = %[[C0]] to %[[C64]] step %[[C8]]
// CHECK: memref.load %[[A]][%[[I]]]
// CHECK: memref.store %{{.+}}, %[[B]][%[[I]]]
// CHECK: return
// CHECK-LABEL: func.func private @two_nests_nest1(
// CHECK-SAME: %{{.+}}: memref<64xf32>, %[[INIT:.+]]: f32) -> f32 attributes {passthrough = ["noinline"]}
// CHECK: %[[SUM:.+]] = scf.for {{.*}} iter_args(%{{.+}} = %[[INIT]]) -> (f32)
// CHECK: return %[[SUM]] : f32
// CHECK-LABEL: func.func @two_nests(
// CHECK-SAME: %[[X:.+]]: memref<64xf32>, %[[Y:.+]]: memref<64xf32>, %[[S:.+]]: f32)
// CHECK: call @two_nests_nest0(%[[X]], %[[Y]]) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NEXT: %[[R:.+]] = call @two_nests_nest1(%[[Y]], %[[S]]) : (memref<64xf32>, f32) -> f32
// CHECK-NEXT: return %[[R]] : f32
// FEW-LABEL: func.func @two_nests(
// FEW-NOT: call
// FEW: scf.for
// FEW: scf.for
func.func @two_nests(%a: memref<64xf32>, %b: memref<64xf32>, %s: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c8 {
    %v = memref.load %a[%i] : memref<64xf32>
    memref.store %v, %b[%i] : memref<64xf32>
  }
  %sum = scf.for %i = %c0 to %c64 step %c8 iter_args(%acc = %s) -> f32 {
    %v = memref.load %b[%i] : memref<64xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  return %sum : f32
}

// -----

// A function with a single nest stays as it is; an OpenMP parallel region
// counts as a nest.
// CHECK-LABEL: func.func @one_nest(
// CHECK-NOT: call
// CHECK: scf.for
func.func @one_nest(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %z, %a[%i] : memref<64xf32>
  }
  return
}
// CHECK-LABEL: func.func private @parallel_nest0(
// CHECK: omp.parallel
// CHECK-LABEL: func.func private @parallel_nest1(
// CHECK: scf.for
// CHECK-LABEL: func.func @parallel(
// CHECK: call @parallel_nest0
// CHECK-NEXT: call @parallel_nest1
func.func @parallel(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  omp.parallel {
    memref.store %z, %a[%c0] : memref<64xf32>
    omp.terminator
  }
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %z, %a[%i] : memref<64xf32>
  }
  return
}
