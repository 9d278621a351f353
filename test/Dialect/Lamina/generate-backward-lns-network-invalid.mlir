// RUN: lamina-opt %s --lamina-generate-backward=function=loss -split-input-file -verify-diagnostics

// The leaky rectifier's rule: its slope is a constant and takes no
// gradient; a slope computed from a differentiated argument is rejected.

!f = !lns.num<f = 10>
func.func @loss(%x: tensor<4x!f>, %slope: tensor<4x!f>) -> tensor<!f> {
  // expected-error @+1 {{'lns.leaky_relu' op slope depends on a differentiated argument; its gradient is not defined (a leaky rectifier's slope is a constant)}}
  %y = lns.leaky_relu %x, %slope : tensor<4x!f>
  %s = lns.sum %y dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}

// -----

// The slope derived from an argument through other ops is active too.
!f = !lns.num<f = 10>
func.func @loss(%x: tensor<4x!f>, %a: tensor<4x!f>) -> tensor<!f> {
  %slope = lns.tanh %a : tensor<4x!f>
  // expected-error @+1 {{'lns.leaky_relu' op slope depends on a differentiated argument; its gradient is not defined (a leaky rectifier's slope is a constant)}}
  %y = lns.leaky_relu %x, %slope : tensor<4x!f>
  %s = lns.sum %y dims [0] : tensor<4x!f> -> tensor<!f>
  return %s : tensor<!f>
}
