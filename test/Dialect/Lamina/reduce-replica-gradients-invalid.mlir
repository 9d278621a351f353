// RUN: lamina-opt %s --split-input-file --lamina-reduce-replica-gradients="function=f_backward results=1" -verify-diagnostics

// An LNS gradient (i64 codes) has no sum in MPI.
// expected-error @+1 {{result 1 is 'tensor<8xi64>'; only float tensors are reduced over replicas (an LNS gradient's sum is an LNS addition)}}
func.func @f_backward(%x: tensor<4xf32>, %codes: tensor<8xi64>) -> (tensor<4xf32>, tensor<8xi64>) {
  return %x, %codes : tensor<4xf32>, tensor<8xi64>
}

// -----

// expected-error @+1 {{has no result 1 to reduce over replicas}}
func.func @f_backward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{lamina-reduce-replica-gradients: no function @f_backward with a body}}
module {
  func.func private @f_backward(tensor<4xf32>) -> tensor<4xf32>
}

