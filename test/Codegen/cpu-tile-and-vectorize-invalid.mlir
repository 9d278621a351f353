// RUN: lamina-opt %s --lamina-cpu-tile-and-vectorize=vector-bits=128 -verify-diagnostics

// Only the widths the schedules are written for.
// expected-error @+1 {{vector-bits must be 256 (AVX2) or 512 (AVX-512); got 128}}
module {
  func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    return %x : tensor<4x16xf32>
  }
}
