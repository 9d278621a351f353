// RUN: lamina-opt %s -split-input-file -verify-diagnostics --lamina-generate-backward --lamina-decompose --lamina-fuse-epilogues --convert-lamina-to-gpu

// The backward of ops other than the linear layers' has no GPU kernels:
// the diagnostic is on the forward op whose backward it is. Dropout's
// backward is the forward's dropout applied to the cotangent.

func.func @main(%x: tensor<64x32xbf16>, %w: tensor<48x32xbf16>, %b: tensor<48xbf16>, %s: i64) -> tensor<64x48xbf16> {
  // expected-error @below {{'lamina.dropout' op has no GPU lowering: lamina-gpu-pipeline compiles linear layers (fused by lamina-decompose and lamina-fuse-epilogues) and their backward from lamina-generate-backward (transposes, activation derivatives, bias gradients, sums of gradients); lamina-cpu-pipeline compiles the rest}}
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.25, training, offset = 3> seed %s : (tensor<64x32xbf16>, tensor<48x32xbf16>, tensor<48xbf16>, i64) -> tensor<64x48xbf16>
  return %y : tensor<64x48xbf16>
}

// -----

// dW = dyᵀ·x reduces over the rows: rows known only at run time make a
// dynamic reduction, which the GPU kernels do not take (its operands, the
// transposes dyᵀ and xᵀ [32, ?], are dynamic weights).

func.func @main(%x: tensor<?x32xbf16>, %w: tensor<48x32xbf16>) -> tensor<?x48xbf16> {
  // expected-error @below {{'lamina.matmul' op GPU kernels need static weights and biases; got 'tensor<32x?xbf16>' (a backward's dW = dyᵀ·x reduces over the rows, which must then be static)}}
  %y = lamina.linear "fc" %x, %w : (tensor<?x32xbf16>, tensor<48x32xbf16>) -> tensor<?x48xbf16>
  return %y : tensor<?x48xbf16>
}
