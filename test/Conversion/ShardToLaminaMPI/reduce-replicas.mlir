// RUN: lamina-opt %s --convert-shard-to-lamina-mpi | FileCheck %s

// CHECK-DAG: func.func private @laminaMpiReplicaReduceStart_f32(memref<*xf32>, i64) -> i64
// CHECK-DAG: func.func private @laminaMpiReplicaReduceWait_f32(i64, memref<*xf32>, i64, i64)
// CHECK-DAG: func.func private @laminaMpiReplicaReduceStart_bf16(memref<*xbf16>, i64) -> i64

// The reduction starts where the op stands, on a copy of the operand the
// runtime takes; the work before the result's first use (the exp) overlaps
// it. The result's buffer is allocated at the wait: only the handle goes
// from the start to the wait.
// CHECK-LABEL: func.func @overlapped
// CHECK-SAME: (%[[G:.+]]: tensor<8xf32>, %[[X:.+]]: tensor<8xf32>)
// CHECK: %[[EVERY:.+]] = arith.constant -1 : i64
// CHECK: %[[IN:.+]] = bufferization.to_buffer %[[G]] read_only
// CHECK: %[[INU:.+]] = memref.cast %[[IN]]
// CHECK: %[[H:.+]] = call @laminaMpiReplicaReduceStart_f32(%[[INU]], %[[EVERY]]) : (memref<*xf32>, i64) -> i64
// CHECK: %[[E:.+]] = math.exp %[[X]]
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<8xf32>
// CHECK: %[[OUTU:.+]] = memref.cast %[[OUT]] : memref<8xf32> to memref<*xf32>
// CHECK: %[[EVERY2:.+]] = arith.constant -1 : i64
// CHECK: %[[MEAN:.+]] = arith.constant 1 : i64
// CHECK: call @laminaMpiReplicaReduceWait_f32(%[[H]], %[[OUTU]], %[[EVERY2]], %[[MEAN]])
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: %[[S:.+]] = arith.addf %[[R]], %[[E]]
// CHECK: return %[[S]], %[[R]]
func.func @overlapped(%g: tensor<8xf32>, %x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r = lamina.reduce_replicas %g mean : tensor<8xf32>
  %e = math.exp %x : tensor<8xf32>
  %s = arith.addf %r, %e : tensor<8xf32>
  return %s, %r : tensor<8xf32>, tensor<8xf32>
}

// A sum (no mean) of bf16 gradients to replica 1 (ZeRO stage 2), waited
// for at the return.
// CHECK-LABEL: func.func @sum_at_return
// CHECK: %[[ROOT:.+]] = arith.constant 1 : i64
// CHECK: %[[H:.+]] = call @laminaMpiReplicaReduceStart_bf16(%{{.+}}, %[[ROOT]])
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<2x4xbf16>
// CHECK: %[[ROOT2:.+]] = arith.constant 1 : i64
// CHECK: %[[SUM:.+]] = arith.constant 0 : i64
// CHECK: call @laminaMpiReplicaReduceWait_bf16(%[[H]], %{{.+}}, %[[ROOT2]], %[[SUM]])
// CHECK-NEXT: %[[R:.+]] = bufferization.to_tensor
// CHECK-NEXT: return %[[R]]
func.func @sum_at_return(%g: tensor<2x4xbf16>) -> tensor<2x4xbf16> {
  %r = lamina.reduce_replicas %g to 1 : tensor<2x4xbf16>
  return %r : tensor<2x4xbf16>
}
