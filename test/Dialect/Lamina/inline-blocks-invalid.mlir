// RUN: lamina-opt %s --lamina-inline-blocks -split-input-file -verify-diagnostics

// A block is one block of ops: one with control flow is not inlined.
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'func.call' op calls block function @h_block, which has control flow; blocks are functions of one block}}
  %h = func.call @h_block(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}
func.func private @h_block(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.block = "h"} {
  cf.br ^next
^next:
  return %x : tensor<4x8xf32>
}
