// RUN: lamina-opt %s --lamina-generate-backward -split-input-file -verify-diagnostics

// The function to differentiate (`function`, by default @main) does not
// exist: an error on the module.

// expected-error @+1 {{lamina-generate-backward: no function @main to differentiate}}
module {
  func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}

// -----

// A declaration has no body to differentiate.

// expected-error @+1 {{no function @main to differentiate}}
module {
  func.func private @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
}

// -----

// math.atan on a tensor between the argument and the result has no rule.

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'math.atan' op has no reverse-mode rule (ReverseDifferentiableOpInterface), but a gradient flows through it}}
  %e = math.atan %x : tensor<4x8xf32>
  %y = arith.addf %x, %e : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Nor does a linalg.generic (here a square) after a layer.

func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %h = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %init = tensor.empty() : tensor<4x16xf32>
  // expected-error @+1 {{'linalg.generic' op has no reverse-mode rule}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<4x16xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Mixed element types (bf16 operands, f32 result) are not differentiated.

func.func @main(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'lamina.matmul' op backward is generated for f32, bf16, f16 and LNS layers of one element type, got 'tensor<4x8xbf16>', 'tensor<16x8xbf16>' → 'tensor<4x16xf32>'}}
  %y = lamina.linear "fc" %x, %w : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @main(%x: tensor<4x8xbf16>, %w: tensor<24x8xbf16>, %b: tensor<24xbf16>) -> tensor<4x2x4xbf16> {
  // expected-error @+1 {{'lamina.fused_qkv' op backward is generated for f32 layers only, got 'tensor<4x8xbf16>'}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 2 world_size 1 : (tensor<4x8xbf16>, tensor<24x8xbf16>, tensor<24xbf16>) -> (tensor<4x2x4xbf16>, tensor<4x2x4xbf16>, tensor<4x2x4xbf16>)
  return %q : tensor<4x2x4xbf16>
}

// -----

// Control flow: the generator walks one block.

// expected-error @+1 {{'func.func' op has control flow; backward generation takes functions of one block}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  cf.br ^next(%x : tensor<4x8xf32>)
^next(%y: tensor<4x8xf32>):
  return %y : tensor<4x8xf32>
}

// -----

// The pair's names are taken.
// expected-error @+1 {{'func.func' op cannot be differentiated: the module already defines @main_forward}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}
func.func @main_forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// A matmul with its own indexing maps (B transposed) has no rule yet.
func.func @main(%a: tensor<4x8xf32>, %b: tensor<3x8xf32>) -> tensor<4x3xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  // expected-error @+1 {{'linalg.matmul' op backward is generated for plain tensor matmuls (default indexing maps) only}}
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%a, %b : tensor<4x8xf32>, tensor<3x8xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %c : tensor<4x3xf32>
}

// -----

// LayerNorm over a dynamic feature dim.
func.func @main(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'lamina.layer_norm' op backward needs a static normalized (last) dim, got 'tensor<4x?xf32>'}}
  %y = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<4x?xf32>) -> tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// -----

// Only sums are differentiated among reductions.

func.func @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'linalg.reduce' op backward is generated for sums (a single arith.addf of the element and the accumulator) only}}
  %r = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.maximumf %in, %acc : f32
      linalg.yield %a : f32
    }
  return %r : tensor<4xf32>
}

// -----

// A concatenation along a dynamic dim has no static offsets.

func.func @main(%x: tensor<4x?xf32>, %y: tensor<4x8xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'tensor.concat' op backward of a concatenation needs static sizes along the concatenated dim}}
  %c = tensor.concat dim(1) %x, %y : (tensor<4x?xf32>, tensor<4x8xf32>) -> tensor<4x?xf32>
  return %c : tensor<4x?xf32>
}

// -----

// Rotary tables that are differentiated (here, arguments): their gradient
// is not built.

func.func @main(%x: tensor<2x8xf32>, %c: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'lamina.rope' op needs the gradient of its cos / sin tables, which Lamina does not build: the tables must not depend on what is differentiated}}
  %y = lamina.rope %x, %c, %s interleaved : tensor<2x8xf32>, tensor<2x4xf32>
  return %y : tensor<2x8xf32>
}

// -----

// A convolution of dynamic batch has no generated backward.

func.func @main(%x: tensor<?x2x5x5xf32>, %w: tensor<3x2x2x2xf32>, %init: tensor<?x3x4x4xf32>) -> tensor<?x3x4x4xf32> {
  // expected-error @+1 {{'linalg.conv_2d_nchw_fchw' op backward is generated for static convolutions of one float type only}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x2x5x5xf32>, tensor<3x2x2x2xf32>) outs(%init : tensor<?x3x4x4xf32>) -> tensor<?x3x4x4xf32>
  return %y : tensor<?x3x4x4xf32>
}

// -----

// Nor does a padding with ones (only zero paddings are the importer's).

func.func @main(%x: tensor<4x8xf32>) -> tensor<6x8xf32> {
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{'tensor.pad' op backward is generated for static zero paddings only}}
  %p = tensor.pad %x low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}
