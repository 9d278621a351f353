// RUN: lamina-opt %s --lamina-generate-backward=function=loss -split-input-file -verify-diagnostics

// An LNS value used twice: its two gradients would need an LNS addition in
// an order the reference does not define; it rejects fan-out, and so does
// Lamina.

!f = !lns.num<f = 10>
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  // expected-error @+1 {{'lns.relu' op result, an LNS value, feeds more than one operation (fan-out)}}
  %r = lns.relu %x : tensor<4x!f>
  %p = lns.mul %r, %r : tensor<4x!f>, tensor<4x!f>
  %s = lns.sum %p dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

!f = !lns.num<f = 10>
// expected-error @+1 {{'func.func' op argument 0, an LNS value, feeds more than one operation (fan-out)}}
func.func @loss(%x: tensor<4x!f>) -> tensor<!f> {
  %p = lns.mul %x, %x : tensor<4x!f>, tensor<4x!f>
  %s = lns.sum %p dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

!f = !lns.num<f = 10>
func.func @loss(%a: tensor<2x3x4x!f>, %b: tensor<2x4x5x!f>) -> tensor<!f> {
  // expected-error @+1 {{'lns.matmul' op backward is generated for matrices (rank 2), got 'tensor<2x3x4x!lns.num<f = 10>>' and 'tensor<2x4x5x!lns.num<f = 10>>'}}
  %m = lns.matmul %a, %b : tensor<2x3x4x!f>, tensor<2x4x5x!f> -> tensor<2x3x5x!f>
  %s = lns.sum %m dims [0, 1, 2] : tensor<2x3x5x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

!f = !lns.num<f = 10>
func.func @loss(%x: tensor<4x!f>, %w: tensor<3x4x!f>) -> tensor<!f> {
  // expected-error @+1 {{'lns.linear' op backward is generated for static inputs of rank 2 or more, got 'tensor<4x!lns.num<f = 10>>'}}
  %y = lns.linear %x, %w : tensor<4x!f>, tensor<3x4x!f> -> tensor<3x!f>
  %s = lns.sum %y dims [0] : tensor<3x!f> -> tensor<!f>
  return %s : tensor<!f>
}

