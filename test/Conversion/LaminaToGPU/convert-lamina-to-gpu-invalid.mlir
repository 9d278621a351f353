// RUN: lamina-opt %s -split-input-file -verify-diagnostics --convert-lamina-to-gpu

func.func @f32_inputs(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> tensor<16x64xf32> {
  // expected-error @below {{tensor-core kernels take bf16 or f16 inputs and weights of one type; got 'f32' and 'f32'}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

func.func @misaligned_k(%x: tensor<16x60xbf16>, %w: tensor<64x60xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{the reduction size (60) must be a multiple of 8: rows of x and W are copied in 16-byte units}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x60xbf16>, tensor<64x60xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @misaligned_n(%x: tensor<16x64xbf16>, %w: tensor<60x64xbf16>) -> tensor<16x60xbf16> {
  // expected-error @below {{the output width (60) must be a multiple of 8 (16-byte weight tiles)}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<60x64xbf16>) -> tensor<16x60xbf16>
  return %y : tensor<16x60xbf16>
}

// -----

func.func @dynamic_k(%x: tensor<16x?xbf16>, %w: tensor<64x?xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{GPU kernels need static weights and biases; got 'tensor<64x?xbf16>'}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x?xbf16>, tensor<64x?xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @dynamic_width(%x: tensor<?x?xbf16>, %w: tensor<64x64xbf16>) -> tensor<?x64xbf16> {
  // expected-error @below {{GPU kernels need a static last dimension (K and N); only the leading dims may be dynamic}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<?x?xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

func.func @sync(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>, %b: tensor<64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{has a sync point: lamina-gpu-pipeline runs single-GPU programs (collectives on GPU buffers are not generated)}}
  %y = lamina.fused_linear "fc" %x, %w sync <fwd_post, all_reduce> bias %b : (tensor<16x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @partitioned(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>, %seed: i64, %rank: index) -> tensor<16x64xbf16> {
  // expected-error @below {{belongs to a partitioned program: lamina-gpu-pipeline runs single-GPU programs}}
  %y = lamina.fused_linear "fc" %x, %w dropout <p = 0.1, training, fork_rng> seed %seed rank %rank : (tensor<16x64xbf16>, tensor<64x64xbf16>, i64, index) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @vector_input(%x: tensor<64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64xbf16> {
  // expected-error @below {{GPU kernels take inputs of rank 2 or more; got 'tensor<64xbf16>'}}
  %y = lamina.fused_linear "fc" %x, %w : (tensor<64xbf16>, tensor<64x64xbf16>) -> tensor<64xbf16>
  return %y : tensor<64xbf16>
}

// -----

func.func @softmax(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<16x64xbf16> {
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  // expected-error @below {{has no GPU lowering: lamina-gpu-pipeline compiles linear layers (fused by lamina-decompose and lamina-fuse-epilogues) and their backward from lamina-generate-backward (transposes, activation derivatives, bias gradients, sums of gradients); lamina-cpu-pipeline compiles the rest}}
  %z = lamina.softmax "attn" %y dim 1 : tensor<16x64xbf16>
  return %z : tensor<16x64xbf16>
}

// -----

// A function of lamina ops without a layer is a program too.
func.func @no_layer(%x: tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  // expected-error @below {{has no GPU lowering}}
  %z = lamina.softmax "attn" %x dim 1 : tensor<16x64xbf16>
  return %z : tensor<16x64xbf16>
}

// -----

// Only the backward's inits (zero fills of tensor.empty) are taken.
func.func @nonzero_bias_gradient_init(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64xbf16> {
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  %one = arith.constant 1.0 : bf16
  %e = tensor.empty() : tensor<64xbf16>
  %acc = linalg.fill ins(%one : bf16) outs(%e : tensor<64xbf16>) -> tensor<64xbf16>
  // expected-error @below {{has no GPU lowering: lamina-gpu-pipeline compiles linear layers}}
  %s = linalg.reduce ins(%y : tensor<16x64xbf16>) outs(%acc : tensor<64xbf16>) dimensions = [0]
    (%in: bf16, %init: bf16) {
      %t = arith.addf %in, %init : bf16
      linalg.yield %t : bf16
    }
  return %s : tensor<64xbf16>
}

// -----

func.func @init_returned(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>) -> (tensor<16x64xbf16>, tensor<64xbf16>) {
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  %e = tensor.empty() : tensor<64xbf16>
  // expected-error @below {{'func.return' op has no GPU lowering for this operand: a constant or init tensor is only taken as the init of transposes and bias gradients}}
  return %y, %e : tensor<16x64xbf16>, tensor<64xbf16>
}

// -----

// expected-error @below {{GPU entry points return tensors only; got 'i64'}}
func.func @scalar_result(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>, %seed: i64) -> (tensor<16x64xbf16>, i64) {
  %y = lamina.fused_linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  return %y, %seed : tensor<16x64xbf16>, i64
}

// -----

// Only functions and globals directly in a gpu.module translate to PTX.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @below {{'nvvm.setmaxregister' op is directly in gpu.module @kernels: only functions and globals there can be translated to PTX; put it inside a kernel}}
    nvvm.setmaxregister increase 232
  }
}

// -----

// Vectors live in a thread's registers: absurd lengths are rejected.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @below {{'gpu.func' op uses 'vector<65536xf64>', longer than the 1024 elements lamina-gpu-pipeline takes (a vector lives in a thread's registers)}}
    gpu.func @k(%x: vector<65536xf64>) kernel {
      %y = math.absf %x : vector<65536xf64>
      gpu.return
    }
  }
}
