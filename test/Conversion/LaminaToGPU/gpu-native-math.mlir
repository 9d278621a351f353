// RUN: lamina-opt %s --pass-pipeline="builtin.module(gpu.module(lamina-gpu-native-math))" | FileCheck %s

// fma and abs become what PTX does in one instruction; transcendental
// functions stay for libdevice.

gpu.module @kernels {
  // CHECK-LABEL: func.func @scalar(
  // CHECK-SAME:    %[[X:.+]]: f32, %[[Y:.+]]: f32, %[[Z:.+]]: f32)
  // CHECK:         %[[F:.+]] = llvm.intr.fma(%[[X]], %[[Y]], %[[Z]]) : (f32, f32, f32) -> f32
  // CHECK:         %[[BITS:.+]] = arith.bitcast %[[F]] : f32 to i32
  // CHECK:         %[[MASK:.+]] = arith.constant 2147483647 : i32
  // CHECK:         %[[CLEARED:.+]] = arith.andi %[[BITS]], %[[MASK]] : i32
  // CHECK:         %[[ABS:.+]] = arith.bitcast %[[CLEARED]] : i32 to f32
  // CHECK:         %[[T:.+]] = math.tanh %[[ABS]] : f32
  // CHECK:         return %[[T]]
  func.func @scalar(%x: f32, %y: f32, %z: f32) -> f32 {
    %f = math.fma %x, %y, %z : f32
    %a = math.absf %f : f32
    %t = math.tanh %a : f32
    return %t : f32
  }

  // CHECK-LABEL: func.func @vector_f64(
  // CHECK:         %[[BITS:.+]] = arith.bitcast %{{.+}} : vector<2xf64> to vector<2xi64>
  // CHECK:         %[[MASK:.+]] = arith.constant 9223372036854775807 : i64
  // CHECK:         %[[SPLAT:.+]] = vector.broadcast %[[MASK]] : i64 to vector<2xi64>
  // CHECK:         arith.andi %[[BITS]], %[[SPLAT]] : vector<2xi64>
  // CHECK:         math.log
  func.func @vector_f64(%x: vector<2xf64>) -> vector<2xf64> {
    %a = math.absf %x : vector<2xf64>
    %l = math.log %a : vector<2xf64>
    return %l : vector<2xf64>
  }
}
