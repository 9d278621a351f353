// RUN: lamina-opt %s --lamina-reduce-replica-gradients="function=f_backward results=0 roots=0,1" -verify-diagnostics

// expected-error @+1 {{lamina-reduce-replica-gradients takes one root per result (1 results, 2 roots)}}
func.func @f_backward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
