// RUN: lamina-opt %s --lamina-record-module-paths | FileCheck %s

// The importer's name locations become lamina.module attributes; ops with
// other locations are left alone.
// CHECK-LABEL: func.func @norm
// CHECK: arith.mulf %{{.*}}, %{{.*}} {lamina.module = "h.0.norm"} : tensor<4x8xf32>
// CHECK: lamina.linear "h.0.fc" {{.*}} {lamina.module = "h.0.fc"}
// CHECK: arith.addf %{{.*}}, %{{.*}} : tensor<4x16xf32>
// CHECK-NOT: lamina.module
func.func @norm(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = arith.mulf %x, %x : tensor<4x8xf32> loc("h.0.norm")
  %1 = lamina.linear "h.0.fc" %0, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("h.0.fc")
  %2 = arith.addf %1, %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
