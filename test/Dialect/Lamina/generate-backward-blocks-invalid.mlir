// RUN: lamina-opt %s --lamina-generate-backward -split-input-file -verify-diagnostics

// A sharded program is partitioned whole before it is differentiated: it
// cannot call block functions (lamina-outline-blocks leaves it inline).
module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{'func.func' op shards values and calls block function @h_block; a sharded program is partitioned whole: leave its blocks inline (lamina-outline-blocks does)}}
  func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>},
                  %w1: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    %h0 = func.call @h_block(%x, %w0) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
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
