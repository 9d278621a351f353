// What upstream verifiers of MLIR 22.1 crash on or miss is an error at
// Lamina's entry points (lib/Support/ParseModule.cpp; lamina-opt checks
// before its first pass); found by
// lamina-gpu-fuzzer and lamina-parse-fuzzer.
// RUN: rm -rf %t && split-file %s %t
// RUN: not lamina-run %t/workgroup.mlir 2>&1 | FileCheck %t/workgroup.mlir
// RUN: not lamina-compile %t/workgroup.mlir -o %t.o 2>&1 | FileCheck %t/workgroup.mlir
// RUN: not lamina-opt %t/workgroup.mlir 2>&1 | FileCheck %t/workgroup.mlir
// RUN: not lamina-run %t/empty-symbol.mlir 2>&1 | FileCheck %t/empty-symbol.mlir
// RUN: not lamina-opt %t/empty-symbol.mlir 2>&1 | FileCheck %t/empty-symbol.mlir
// RUN: not lamina-opt %t/workgroup.mlir --lamina-cpu-pipeline 2>&1 | FileCheck %t/workgroup.mlir

//--- workgroup.mlir

// The custom syntax of gpu.func sets the count itself; the generic one
// takes it as written.
// CHECK: workgroup.mlir:[[@LINE+3]]:5: error: 'gpu.func' op workgroup_attributions = -1 does not count arguments of its body: 0 follow its inputs
"builtin.module"() ({
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (vector<4xf64>) -> ()}> ({
    ^bb0(%x: vector<4xf64>):
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k", workgroup_attributions = -1 : i64} : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()

//--- empty-symbol.mlir
// Verifies upstream, prints as @<<INVALID EMPTY SYMBOL>>.
// CHECK: empty-symbol.mlir:[[@LINE+1]]:1: error: 'func.func' op has an empty symbol name
"func.func"() <{function_type = () -> (), sym_name = ""}> ({
  "func.return"() : () -> ()
}) : () -> ()
