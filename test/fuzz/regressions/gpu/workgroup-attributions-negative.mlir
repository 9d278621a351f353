"builtin.module"() ({
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (vector<65536xf64>) -> ()}> ({
    ^bb0(%arg0: vector<65536xf64>):
      %0 = "math.absf"(%arg0) <{fastmath = #arith.fastmath<none>}> : (vector<65536xf64>) -> vector<65536xf64>
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k", workgroup_attributions = -1 : i64} : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()
