// RUN: lamina-opt %s --lamina-check-gradient-layouts --split-input-file -verify-diagnostics

// The gradient-layout check over a grid of several axes: each axis on its
// own, the error naming it.

// The Megatron MLP on data replicas without fc1's bwd_post sync: on `tp`
// each rank's gradient of x is a partial sum.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{'func.func' op the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'fc1'; add sync("bwd_post", "all_reduce") on the input of layer 'fc1' (on grid axis 'tp')}}
  func.func @missing_bwd_post(
      %x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>},
      %w1: tensor<32x16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<16x32xf32> {lamina.layout = #lamina.layout<S(1)>})
      -> tensor<8x16xf32> {
    %h = lamina.matmul "fc1" %x, %w1 : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
    %y = lamina.matmul "fc2" %h, %w2 : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
    %r = lamina.sync "fc2" %y <fwd_post, all_reduce> : tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
}

// -----

// Over `dp`, a weight computed from an argument (here squared) gets partial
// gradients from each replica's batch, but only layer parameters' gradients
// are summed over the replicas: the argument's would stay partial. A bwd_post
// sync acts on `tp` and would not help.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{'func.func' op the gradient of argument 1 would be partial sums (layout P) on each rank, coming from layer 'fc'; only the gradients of layer parameters are summed over grid axis 'dp' (on grid axis 'dp')}}
  func.func @derived_weight(
      %x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>},
      %v: tensor<32x16xf32>) -> tensor<8x32xf32> {
    %w = arith.mulf %v, %v : tensor<32x16xf32>
    %s = lamina.sync "fc" %x <bwd_post, all_reduce> : tensor<8x16xf32>
    %h = lamina.matmul "fc" %s, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
    return %h : tensor<8x32xf32>
  }
}
