// REQUIRES: ptxas
// Without a CUDA driver, --target=cuda builds the artefact and then says
// why it cannot run; with one, the GPU reproduces the CPU pipeline.
//
// RUN: lamina-run %s --random-inputs --output-dir=%t.cpu
// RUN: %if cuda-driver %{ lamina-run %s --target=cuda --random-inputs --reference=%t.cpu/result0.npy --rtol=2e-2 --atol=2e-2 | FileCheck %s --check-prefix=GPU %}
// RUN: %if !cuda-driver %{ not lamina-run %s --target=cuda --random-inputs 2>&1 | FileCheck %s --check-prefix=NODRIVER %}
// RUN: not lamina-run %s --target=tpu --random-inputs 2>&1 | FileCheck %s --check-prefix=TARGET

// GPU: result 0: bf16[64, 256]
// GPU: result 0 vs reference: {{.*}} 0/16384 beyond {{.*}}: ok
// NODRIVER: lamina-run: error: no usable GPU: cannot load the CUDA driver (libcuda.so.1)
// TARGET: lamina-run: error: unknown --target 'tpu': expected cpu or cuda

func.func @main(%x: tensor<64x128xbf16>, %w: tensor<256x128xbf16>, %b: tensor<256xbf16>) -> tensor<64x256xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<64x128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>) -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
