// RUN: lamina-opt %s --lamina-generate-backward="function=main constants=1,3" -verify-diagnostics

// expected-error @+1 {{'func.func' op has no argument 3 to hold constant (constants=); it takes 2}}
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %y = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
