// What upstream verifiers of MLIR 22.1 crash on is an error at Lamina's
// entry points (lib/Support/ParseModule.cpp), found by lamina-gpu-fuzzer.
// RUN: not lamina-run %s 2>&1 | FileCheck %s
// RUN: not lamina-compile %s -o %t.o 2>&1 | FileCheck %s

// The custom syntax of gpu.func sets the count itself; the generic one
// takes it as written.
// CHECK: upstream-verifier-hazards.mlir:[[@LINE+3]]:5: error: 'gpu.func' op workgroup_attributions = -1 does not count arguments of its body: 0 follow its inputs
"builtin.module"() ({
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (vector<4xf64>) -> ()}> ({
    ^bb0(%x: vector<4xf64>):
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k", workgroup_attributions = -1 : i64} : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()
