// RUN: lamina-opt %s --lamina-internalize-functions | FileCheck %s

// The C interface stays external. The entry it wraps becomes internal and
// stays out of line; the private loop nest internal, still noinline;
// a public function without a C interface (an entry of its own) and
// declarations (runtime functions) untouched.

// CHECK-LABEL: llvm.func internal @f(
// CHECK-SAME: no_inline
llvm.func @f(%p: !llvm.ptr, %n: i64) attributes {llvm.emit_c_interface} {
  llvm.call @f_nest0(%p, %n) : (!llvm.ptr, i64) -> ()
  llvm.call @runtime_call(%p) : (!llvm.ptr) -> ()
  llvm.return
}

// CHECK-LABEL: llvm.func @_mlir_ciface_f(
// CHECK-NOT: no_inline
// CHECK: llvm.call @f(
llvm.func @_mlir_ciface_f(%d: !llvm.ptr) attributes {llvm.emit_c_interface} {
  %p = llvm.load %d : !llvm.ptr -> !llvm.ptr
  %n = llvm.mlir.constant(4 : i64) : i64
  llvm.call @f(%p, %n) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// CHECK-LABEL: llvm.func internal @f_nest0(
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-NOT: no_inline
llvm.func @f_nest0(%p: !llvm.ptr, %n: i64) attributes {passthrough = ["noinline"], sym_visibility = "private"} {
  llvm.return
}

// CHECK-LABEL: llvm.func @g(
// CHECK-NOT: no_inline
// CHECK: llvm.return
llvm.func @g() {
  llvm.return
}

// CHECK-LABEL: llvm.func @runtime_call(!llvm.ptr)
llvm.func @runtime_call(!llvm.ptr)
