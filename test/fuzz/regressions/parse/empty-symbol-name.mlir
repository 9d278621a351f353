"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>, sym_name = ""}> ({
  ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<16x8xf32>):
    %0 = "lamina.linear"(%arg0, %arg1) <{path = "fc"}> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    "func.return"(%0) : (tensor<4x16xf32>) -> ()
  }) : () -> ()
}) : () -> ()
