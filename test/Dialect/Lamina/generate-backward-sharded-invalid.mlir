// RUN: lamina-opt %s --lamina-generate-backward -verify-diagnostics

// A column-parallel layer without any sync: each rank holds a block of the
// weight, so differentiating whole tensors would be wrong; the pass refuses.
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op shards argument 1 (#lamina.layout<S(0)>): backward generation for tensor-parallel programs is not available; differentiate the program of one rank}}
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    %y = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}
