// RUN: lamina-opt %s --convert-lns-to-arith --split-input-file -verify-diagnostics

func.func @pairwise(%x: tensor<4x!lns.num<f = 10>>) -> !lns.num<f = 10> {
  // expected-error @+1 {{reduction order 'pairwise' has no lowering yet; use 'sequential'}}
  %0 = lns.sum %x dims [0] order pairwise : tensor<4x!lns.num<f = 10>> -> !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}
