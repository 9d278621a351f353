// RUN: lamina-opt %s -split-input-file -verify-diagnostics "--convert-lamina-to-gpu=lns-sbdb=table"

func.func @wide(%x: tensor<4x8x!lns.num<f = 23>>, %w: tensor<16x8x!lns.num<f = 23>>) -> tensor<4x16x!lns.num<f = 23>> {
  // expected-error @below {{sbdb mode 'table' is defined for a base given by f <= 16; the layer computes in '!lns.num<f = 23>'}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<4x8x!lns.num<f = 23>>, tensor<16x8x!lns.num<f = 23>>) -> tensor<4x16x!lns.num<f = 23>>
  return %y : tensor<4x16x!lns.num<f = 23>>
}

// -----

func.func @explicit_base(%x: tensor<4x8x!lns.num<b = 1.5>>, %w: tensor<16x8x!lns.num<b = 1.5>>) -> tensor<4x16x!lns.num<b = 1.5>> {
  // expected-error @below {{sbdb mode 'table' is defined for a base given by f <= 16; the layer computes in '!lns.num<b = 1.5>'}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<4x8x!lns.num<b = 1.5>>, tensor<16x8x!lns.num<b = 1.5>>) -> tensor<4x16x!lns.num<b = 1.5>>
  return %y : tensor<4x16x!lns.num<b = 1.5>>
}
