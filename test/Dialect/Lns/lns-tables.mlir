// RUN: lamina-opt %s --lamina-lns-tables | FileCheck %s

// Additions in ideal mode switch to tables where f <= 16; explicit bases,
// f > 16 and non-additions stay as they are.

// CHECK-LABEL: func.func @modes(
func.func @modes(%a: !lns.num<f = 10>, %b: !lns.num<f = 10>,
                 %c: !lns.num<f = 23>, %d: !lns.num<b = 1.5>,
                 %x: tensor<4x8x!lns.num<f = 16>>, %w: tensor<16x8x!lns.num<f = 16>>,
                 %v: tensor<8x!lns.num<f = 12>>) {
  // CHECK: lns.add %{{.+}}, %{{.+}} sbdb table : !lns.num<f = 10>, !lns.num<f = 10>
  %0 = lns.add %a, %b : !lns.num<f = 10>, !lns.num<f = 10>
  // CHECK: lns.sub %{{.+}}, %{{.+}} sbdb table : !lns.num<f = 10>, !lns.num<f = 10>
  %1 = lns.sub %a, %b : !lns.num<f = 10>, !lns.num<f = 10>
  // CHECK: lns.add %{{.+}}, %{{.+}} : !lns.num<f = 23>, !lns.num<f = 23>
  %2 = lns.add %c, %c : !lns.num<f = 23>, !lns.num<f = 23>
  // CHECK: lns.add %{{.+}}, %{{.+}} : !lns.num<b = 1.5{{.*}}>, !lns.num<b = 1.5{{.*}}>
  %3 = lns.add %d, %d : !lns.num<b = 1.5>, !lns.num<b = 1.5>
  // CHECK: lns.mul %{{.+}}, %{{.+}} : !lns.num<f = 10>, !lns.num<f = 10>
  %4 = lns.mul %a, %b : !lns.num<f = 10>, !lns.num<f = 10>
  // CHECK: lns.linear %{{.+}}, %{{.+}} sbdb table : tensor<4x8x!lns.num<f = 16>>
  %5 = lns.linear %x, %w : tensor<4x8x!lns.num<f = 16>>, tensor<16x8x!lns.num<f = 16>> -> tensor<4x16x!lns.num<f = 16>>
  // CHECK: lns.sum %{{.+}} dims [0] sbdb table : tensor<8x!lns.num<f = 12>>
  %6 = lns.sum %v dims [0] : tensor<8x!lns.num<f = 12>> -> !lns.num<f = 12>
  return
}
