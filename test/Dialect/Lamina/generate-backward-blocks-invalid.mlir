// RUN: lamina-opt %s --lamina-generate-backward -split-input-file -verify-diagnostics

// A sharded program's block is partitioned once, for the layouts its calls
// pass: h.1 passes the S(1) value h.0's column-parallel layer returns where
// h.0 was passed a replicated one.
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>},
                  %w1: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    // expected-note @+1 {{the earlier call}}
    %h0 = func.call @h_block(%x, %w0) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'func.call' op passes argument 0 with layout #lamina.layout<S(1)> to @h_block, which an earlier call passes with #lamina.layout<R>; a called function is partitioned once, for one layout of its arguments}}
    %h1 = func.call @h_block(%h0, %w1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %h1 : tensor<4x8xf32>
  }
  func.func private @h_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
      attributes {lamina.block = "h"} {
    %0 = lamina.linear "h.0.fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// A block's forward and backward are named after it: a function of that
// name already there is not overwritten.
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = func.call @h_block(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}
// expected-error @+1 {{'func.func' op cannot be differentiated: the module already defines @h_block_backward}}
func.func private @h_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.block = "h"} {
  %0 = lamina.matmul "h.0.fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
func.func private @h_block_backward() {
  return
}

// -----

// A block differentiated like a program: an op without a rule in it is
// named.
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = func.call @h_block(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}
func.func private @h_block(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.block = "h"} {
  // expected-error @+1 {{'math.floor' op has no reverse-mode rule (ReverseDifferentiableOpInterface), but a gradient flows through it}}
  %0 = math.floor %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
