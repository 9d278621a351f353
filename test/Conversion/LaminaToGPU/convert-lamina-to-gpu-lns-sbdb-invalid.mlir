// RUN: lamina-opt %s -verify-diagnostics "--convert-lamina-to-gpu=lns-sbdb=exact"

// expected-error @below {{unknown lns-sbdb mode 'exact': expected ideal or table}}
module {
  func.func @f(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>> {
    %y = lamina.fused_linear "fc" %x, %w : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
    return %y : tensor<4x16x!lns.num<f = 10>>
  }
}
