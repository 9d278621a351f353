// RUN: lamina-opt %s --convert-lns-to-arith=vector-bits=128 -verify-diagnostics

// The table-mode kernel runs on AVX2 or AVX-512 vectors only.
// expected-error @+1 {{vector-bits must be 256 (AVX2) or 512 (AVX-512); got 128}}
module {
func.func @table_linear(%x: tensor<4x64x!lns.num<f = 10>>, %w: tensor<64x64x!lns.num<f = 10>>) -> tensor<4x64x!lns.num<f = 10>> {
  %0 = lns.linear %x, %w sbdb table : tensor<4x64x!lns.num<f = 10>>, tensor<64x64x!lns.num<f = 10>> -> tensor<4x64x!lns.num<f = 10>>
  return %0 : tensor<4x64x!lns.num<f = 10>>
}
}
