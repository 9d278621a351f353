// RUN: lamina-opt %s --split-input-file --lamina-descriptors-by-pointer | FileCheck %s

// The entry takes its interface's arguments: a descriptor pointer and a
// scalar. Each use of a field becomes an invariant load right before its
// user, in whatever block the user is; a field used twice is loaded twice
// (LLVM merges them). The interface passes its arguments through and loses
// its loads.

// CHECK-LABEL: llvm.func internal @f(
// CHECK-SAME: %[[D:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK-SAME: no_inline
// CHECK-NEXT: %[[A1:.*]] = llvm.getelementptr %[[D]][0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK-NEXT: %[[DATA:.*]] = llvm.load %[[A1]] invariant : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[A2:.*]] = llvm.getelementptr %[[D]][0, 3, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK-NEXT: %[[SIZE:.*]] = llvm.load %[[A2]] invariant : !llvm.ptr -> i64
// CHECK-NEXT: %[[E:.*]] = llvm.getelementptr %[[DATA]][%[[SIZE]]]
// CHECK-NEXT: llvm.call @use(%[[E]], %[[N]])
// CHECK-NEXT: llvm.br ^bb1
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: %[[A3:.*]] = llvm.getelementptr %[[D]][0, 1]
// CHECK-NEXT: %[[DATA2:.*]] = llvm.load %[[A3]] invariant : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[A4:.*]] = llvm.getelementptr %[[D]][0, 4, 0]
// CHECK-NEXT: %[[STRIDE:.*]] = llvm.load %[[A4]] invariant : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @use(%[[DATA2]], %[[STRIDE]])
// CHECK-NEXT: llvm.return
llvm.func internal @f(%alloc: !llvm.ptr, %data: !llvm.ptr, %offset: i64,
                      %size0: i64, %size1: i64, %stride0: i64, %stride1: i64,
                      %n: i64) attributes {no_inline} {
  %e = llvm.getelementptr %data[%size1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.call @use(%e, %n) : (!llvm.ptr, i64) -> ()
  llvm.br ^next
^next:
  llvm.call @use(%data, %stride0) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// CHECK-LABEL: llvm.func @_mlir_ciface_f(
// CHECK-SAME: %[[D:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK-NEXT: llvm.call @f(%[[D]], %[[N]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT: llvm.return
llvm.func @_mlir_ciface_f(%d: !llvm.ptr, %n: i64) {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %1 = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %2 = llvm.extractvalue %desc[2] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %3 = llvm.extractvalue %desc[3, 0] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %4 = llvm.extractvalue %desc[3, 1] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %5 = llvm.extractvalue %desc[4, 0] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  %6 = llvm.extractvalue %desc[4, 1] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
  llvm.call @f(%0, %1, %2, %3, %4, %5, %6, %n) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
  llvm.return
}

llvm.func @use(!llvm.ptr, i64)

// -----

// An entry with a result: the interface's first argument is where it stores
// it. The entry takes that argument too (unused) and keeps its result.

// CHECK-LABEL: llvm.func internal @g(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %[[D:.*]]: !llvm.ptr) -> i64
// CHECK-NEXT: %[[A:.*]] = llvm.getelementptr %[[D]][0, 2]
// CHECK-NEXT: %[[OFFSET:.*]] = llvm.load %[[A]] invariant : !llvm.ptr -> i64
// CHECK-NEXT: llvm.return %[[OFFSET]] : i64
llvm.func internal @g(%alloc: !llvm.ptr, %data: !llvm.ptr, %offset: i64) -> i64 {
  llvm.return %offset : i64
}

// CHECK-LABEL: llvm.func @_mlir_ciface_g(
// CHECK-SAME: %[[R:.*]]: !llvm.ptr, %[[D:.*]]: !llvm.ptr)
// CHECK-NEXT: %[[V:.*]] = llvm.call @g(%[[R]], %[[D]]) : (!llvm.ptr, !llvm.ptr) -> i64
// CHECK-NEXT: llvm.store %[[V]], %[[R]]
llvm.func @_mlir_ciface_g(%result: !llvm.ptr, %d: !llvm.ptr) {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, ptr, i64)>
  %1 = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, ptr, i64)>
  %2 = llvm.extractvalue %desc[2] : !llvm.struct<(ptr, ptr, i64)>
  %v = llvm.call @g(%0, %1, %2) : (!llvm.ptr, !llvm.ptr, i64) -> i64
  llvm.store %v, %result : i64, !llvm.ptr
  llvm.return
}

// -----

// Left as they are: an exported entry (the host may call it), an entry that
// another function calls too, and a call passing a value the interface
// computes.

// CHECK-LABEL: llvm.func @exported(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: i64)
llvm.func @exported(%data: !llvm.ptr, %offset: i64) {
  llvm.return
}
// CHECK-LABEL: llvm.func @_mlir_ciface_exported(
// CHECK: llvm.load
// CHECK: llvm.call @exported(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> ()
llvm.func @_mlir_ciface_exported(%d: !llvm.ptr) {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, i64)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, i64)>
  %1 = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, i64)>
  llvm.call @exported(%0, %1) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// CHECK-LABEL: llvm.func internal @shared(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: i64)
llvm.func internal @shared(%data: !llvm.ptr, %offset: i64) {
  llvm.return
}
// CHECK-LABEL: llvm.func @_mlir_ciface_shared(
// CHECK: llvm.call @shared(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> ()
llvm.func @_mlir_ciface_shared(%d: !llvm.ptr) {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, i64)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, i64)>
  %1 = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, i64)>
  llvm.call @shared(%0, %1) : (!llvm.ptr, i64) -> ()
  llvm.return
}
llvm.func @other(%p: !llvm.ptr) {
  %c = llvm.mlir.constant(0 : i64) : i64
  llvm.call @shared(%p, %c) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// CHECK-LABEL: llvm.func internal @computed(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: i64)
llvm.func internal @computed(%data: !llvm.ptr, %offset: i64) {
  llvm.return
}
// CHECK-LABEL: llvm.func @_mlir_ciface_computed(
// CHECK: llvm.call @computed(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> ()
llvm.func @_mlir_ciface_computed(%d: !llvm.ptr) {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, i64)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, i64)>
  %c = llvm.mlir.constant(1 : i64) : i64
  llvm.call @computed(%0, %c) : (!llvm.ptr, i64) -> ()
  llvm.return
}
