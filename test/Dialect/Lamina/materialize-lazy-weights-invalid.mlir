// RUN: lamina-opt %s --lamina-materialize-lazy-weights --split-input-file -verify-diagnostics

func.func @two_widths(%x: tensor<4x17xf32>, %y: tensor<4x24xf32>, %w: tensor<8x?xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-note @+1 {{first input of width 17 here}}
  %0 = lamina.linear "lazy" %x, %w : (tensor<4x17xf32>, tensor<8x?xf32>) -> tensor<4x8xf32>
  // expected-error @+1 {{uses a lazy weight with inputs of width 24, but it was materialized with in_features 17}}
  %1 = lamina.linear "lazy" %y, %w : (tensor<4x24xf32>, tensor<8x?xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @unknown_width(%x: tensor<4x?xf32>, %w: tensor<8x?xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{has a lazy weight but an input of unknown width; the first input must fix in_features}}
  %0 = lamina.linear "lazy" %x, %w : (tensor<4x?xf32>, tensor<8x?xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
