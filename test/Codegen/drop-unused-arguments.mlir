// RUN: lamina-opt %s --lamina-drop-unused-arguments | FileCheck %s

// An internal function that reads only the data pointer of its descriptor
// loses the other fields, at its definition and at each of its calls; the
// arguments it keeps keep their attributes; the values the callers computed
// for the others stay (the canonicalizer erases them).

// CHECK-LABEL: llvm.func internal @block(
// CHECK-SAME: %[[DATA:.*]]: !llvm.ptr {llvm.noalias}, %[[N:.*]]: i64)
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-NEXT: llvm.call @use(%[[DATA]], %[[N]])
llvm.func internal @block(%alloc: !llvm.ptr {llvm.noalias}, %data: !llvm.ptr {llvm.noalias}, %offset: i64,
                          %size: i64, %stride: i64, %n: i64)
    attributes {passthrough = ["noinline"]} {
  llvm.call @use(%data, %n) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// CHECK-LABEL: llvm.func @entry(
// CHECK-SAME: %[[A:.*]]: !llvm.ptr, %[[D:.*]]: !llvm.ptr, %[[I:.*]]: i64)
// CHECK: llvm.call @block(%[[D]], %[[I]]) : (!llvm.ptr, i64) -> ()
// CHECK: %[[R:.*]] = llvm.call @result(%[[I]]) : (i64) -> i64
// CHECK: llvm.call @block(%[[A]], %[[R]]) : (!llvm.ptr, i64) -> ()
llvm.func @entry(%a: !llvm.ptr, %d: !llvm.ptr, %i: i64) {
  llvm.call @block(%a, %d, %i, %i, %i, %i) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
  %r = llvm.call @result(%a, %i) : (!llvm.ptr, i64) -> i64
  llvm.call @block(%d, %a, %r, %r, %r, %r) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
  llvm.return
}

// A private function keeps its results.
// CHECK-LABEL: llvm.func internal @result(
// CHECK-SAME: %{{.*}}: i64) -> i64
llvm.func internal @result(%unused: !llvm.ptr, %i: i64) -> i64 {
  llvm.return %i : i64
}

// Left as they are: an exported function (another module may call it), a
// function whose address is taken (an indirect call may pass anything),
// and a declaration.

// CHECK-LABEL: llvm.func @exported(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: i64)
llvm.func @exported(%unused: !llvm.ptr, %i: i64) {
  llvm.return
}

// CHECK-LABEL: llvm.func internal @address_taken(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: i64)
llvm.func internal @address_taken(%unused: !llvm.ptr, %i: i64) {
  llvm.return
}
llvm.func @takes_address() -> !llvm.ptr {
  %f = llvm.mlir.addressof @address_taken : !llvm.ptr
  llvm.return %f : !llvm.ptr
}

// CHECK-LABEL: llvm.func @use(!llvm.ptr, i64)
llvm.func @use(!llvm.ptr, i64)
