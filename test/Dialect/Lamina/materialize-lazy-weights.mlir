// RUN: lamina-opt %s --lamina-materialize-lazy-weights --split-input-file | FileCheck %s

// An LNSLazyLinear: the weight's in_features comes from the input.
// CHECK-LABEL: func.func @lazy
// CHECK-SAME: (%{{.*}}: tensor<4x17x!lns.num<f = 10>>, %[[W:.+]]: tensor<8x17x!lns.num<f = 10>>, %{{.*}}: tensor<8x!lns.num<f = 10>>)
// CHECK: lamina.linear "lazy" %{{.*}}, %[[W]] bias %{{.*}} : (tensor<4x17x!lns.num<f = 10>>, tensor<8x17x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>>)
func.func @lazy(%x: tensor<4x17x!lns.num<f = 10>>, %w: tensor<8x?x!lns.num<f = 10>>, %b: tensor<8x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>> {
  %0 = lamina.linear "lazy" %x, %w bias %b : (tensor<4x17x!lns.num<f = 10>>, tensor<8x?x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>>
  return %0 : tensor<4x8x!lns.num<f = 10>>
}
