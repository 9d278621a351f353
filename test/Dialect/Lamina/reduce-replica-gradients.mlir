// RUN: lamina-opt %s --lamina-reduce-replica-gradients="function=f_backward results=1,2" | FileCheck %s
// RUN: lamina-opt %s --lamina-reduce-replica-gradients="function=f_backward results=1 mean=false overlap=false" | FileCheck %s --check-prefix=END
// RUN: lamina-opt %s --lamina-reduce-replica-gradients="function=f_backward results=1,2" --lamina-partition | FileCheck %s --check-prefix=PART
// RUN: lamina-opt %s --lamina-reduce-replica-gradients="function=f_backward results=1,2 roots=1,0" | FileCheck %s --check-prefix=ROOTS

// The weight's gradient is reduced right after its matmul, before the
// input's gradient is computed; a value returned twice is reduced once.
// CHECK-LABEL: func.func @f_backward
// CHECK: %[[DW:.+]] = lamina.matmul "fc" %arg0, %arg1
// CHECK-NEXT: %[[R:.+]] = lamina.reduce_replicas %[[DW]] mean : tensor<16x8xf32>
// CHECK-NEXT: lamina.matmul "fc" %arg2, %arg3
// CHECK-NEXT: %[[DX:.+]] = lamina.sync
// CHECK-NEXT: return %[[DX]], %[[R]], %[[R]]

// Without overlap, the sum is taken at the end.
// END-LABEL: func.func @f_backward
// END: %[[DW:.+]] = lamina.matmul "fc" %arg0, %arg1
// END-NEXT: lamina.matmul "fc" %arg2, %arg3
// END-NEXT: %[[DX:.+]] = lamina.sync
// END-NEXT: %[[R:.+]] = lamina.reduce_replicas %[[DW]] : tensor<16x8xf32>
// END-NEXT: return %[[DX]], %[[R]], %[[DW]]

// On the tensor axis, the reduction keeps its operand's layout: each rank
// sums its block of the sharded gradient over the replicas.
// PART-LABEL: func.func @f_backward
// PART-SAME: -> (tensor<4x8xf32>, tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>})
// PART: %[[DW:.+]] = lamina.matmul "fc" %arg0, %arg1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
// PART-NEXT: lamina.reduce_replicas %[[DW]] mean : tensor<8x8xf32>
// ZeRO stage 2: each sum goes to its owner; one value for two owners is
// reduced twice.
// ROOTS-LABEL: func.func @f_backward
// ROOTS: %[[DW:.+]] = lamina.matmul "fc" %arg0, %arg1
// ROOTS-NEXT: %[[R0:.+]] = lamina.reduce_replicas %[[DW]] mean to 0 : tensor<16x8xf32>
// ROOTS-NEXT: %[[R1:.+]] = lamina.reduce_replicas %[[DW]] mean to 1 : tensor<16x8xf32>
// ROOTS: return %{{.+}}, %[[R1]], %[[R0]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @f_backward(%dyT: tensor<16x4xf32> {lamina.layout = #lamina.layout<S(0)>},
                        %xT: tensor<8x4xf32>,
                        %dy: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
                        %wT: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>})
      -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
    %dw = lamina.matmul "fc" %dyT, %xT : (tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<16x8xf32>
    %p = lamina.matmul "fc" %dy, %wT : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %dx = lamina.sync "fc" %p <fwd_post, all_reduce> : tensor<4x8xf32>
    return %dx, %dw, %dw : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  }
}
