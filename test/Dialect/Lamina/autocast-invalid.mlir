// RUN: lamina-opt %s --lamina-autocast="element=f8" -verify-diagnostics

// expected-error @+1 {{lamina-autocast: element must be bf16 or f16, not 'f8'}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
