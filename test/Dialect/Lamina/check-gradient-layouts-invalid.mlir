// RUN: lamina-opt %s --lamina-check-gradient-layouts --split-input-file -verify-diagnostics

// The Megatron MLP without fc1's bwd_post sync: each rank's gradient of x is
// a partial sum (Slapo's Verify checks only the forward and misses it).
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'fc1'; add sync("bwd_post", "all_reduce") on the input of layer 'fc1'}}
  func.func @no_bwd_post(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

// The partial gradient from fc1 flows back through a norm's statistics (a
// row sum and its broadcast: every rank pulls it back through the same
// Jacobian, so it stays partial) to x, where the missing sync is named.
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op the gradient of argument 0 would be partial sums (layout P) on each rank, coming from layer 'fc1'; add sync("bwd_post", "all_reduce") on the input of layer 'fc1'}}
  func.func @partial_through_a_norm(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %zero = arith.constant 0.0 : f32
    %sq = arith.mulf %x, %x : tensor<4x8xf32>
    %e = tensor.empty() : tensor<4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
      (%in: f32, %acc: f32) {
        %r = arith.addf %in, %acc : f32
        linalg.yield %r : f32
      }
    %e2 = tensor.empty() : tensor<4x8xf32>
    %b = linalg.broadcast ins(%sum : tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) dimensions = [1]
    %n = arith.mulf %x, %b : tensor<4x8xf32>
    %0 = lamina.linear "fc1" %n, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

// With a residual, the partial gradient from fc1 meets the residual's whole
// one at x.
module attributes {lamina.world_size = 2 : i64} {
  func.func @residual(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    // expected-error @+1 {{'lamina.linear' op the gradient of its operand sums #lamina.layout<R> and #lamina.layout<P> contributions: the partial sums come from layer 'fc1'; add sync("bwd_post", "all_reduce") on the input of layer 'fc1'}}
    %0 = lamina.linear "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %2 = arith.addf %x, %1 : tensor<4x8xf32>
    return %2 : tensor<4x8xf32>
  }
}

// -----

// A bwd_post all-reduce on a layer whose input gradient is already whole on
// every rank (a replicated weight) would multiply it by the world size.
module attributes {lamina.world_size = 2 : i64} {
  func.func @needless_bwd_post(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'lamina.sync' op sync #lamina.sync<bwd_post, all_reduce> on layer 'fc' transposes to all_reduce, which needs partial (P) gradients, but the gradient has layout #lamina.layout<R>: every rank already holds the whole gradient, which the all-reduce would multiply by the world size}}
    %s = lamina.sync "fc" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %y = lamina.linear "fc" %s, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// A forward all-gather of column-parallel outputs whose gradient is whole on
// every rank must not be reduce-scattered (that would sum the ranks' copies):
// tensor_parallel_output_grad = false splits it instead; true needs partial
// gradients.
module attributes {lamina.world_size = 2 : i64} {
  func.func @gather_of_whole_gradient(%x: tensor<4x8xf32>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    // expected-error @+1 {{'lamina.linear_sync' op sync #lamina.sync<fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = true> on layer 'fc' transposes to reduce_scatter, which needs partial (P) gradients, but the gradient has layout #lamina.layout<R>: every rank holds the whole gradient; with tensor_parallel_output_grad = false the backward keeps each rank's block instead}}
    %y = lamina.linear_sync "fc" %x, %w sync <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = true> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}

// -----

// The same gather with tensor_parallel_output_grad = false: accepted.
module attributes {lamina.world_size = 2 : i64} {
  func.func @gather_split_backward(%x: tensor<4x8xf32>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    %s = lamina.sync "fc" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %y = lamina.linear_sync "fc" %s, %w sync <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}

// -----

// The same gather leaving its transpose open: derived from the whole
// gradient (this rank's block), accepted.
module attributes {lamina.world_size = 2 : i64} {
  func.func @gather_derived_split(%x: tensor<4x8xf32>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    %s = lamina.sync "fc" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %y = lamina.linear_sync "fc" %s, %w sync <fwd_post, all_gather, axis = 1> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}
