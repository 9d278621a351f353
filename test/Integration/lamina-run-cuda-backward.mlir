// REQUIRES: ptxas
// lamina-run --backward --target=cuda: the training pair built for the GPU
// like any program (one Program API for both targets), run against the
// stand-in driver (test/Integration/Inputs/fake-libcuda.c; no kernel
// computes): the forward's tensor-core kernel and GELU, then the backward's
// kernels, all launched, and the three gradients copied back.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %host_cc -shared -fPIC -o %t/libcuda.so.1 %S/Inputs/fake-libcuda.c
// RUN: env LD_LIBRARY_PATH=%t LAMINA_FAKE_CUDA_LOG=%t/log lamina-run %s --target=cuda --backward --random-inputs | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s < %t/log

// OUT:      results: the gradients of arguments 0, 1, 2
// OUT-NEXT: result 0: bf16[256, 1024]
// OUT-NEXT: result 1: bf16[4096, 1024]
// OUT-NEXT: result 2: bf16[4096]

// The forward: the fused x·Wᵀ + b, GELU on 2 × 16 tiles of 384 threads.
// CHECK:      cuModuleGetFunction main_forward_kernel
// CHECK:      cuLaunchKernel grid=(32,1,1) block=(384,1,1) smem=196608
// CHECK:      cuModuleGetFunction main_backward_kernel
// dX = dH·W and dW = dHᵀ·x on tensor cores.
// CHECK:      cuLaunchKernel grid=(8,1,1) block=(384,1,1) smem=196608
// CHECK:      cuLaunchKernel grid=(128,1,1) block=(384,1,1) smem=196608
// CHECK-NOT:  cuLaunchKernel

func.func @main(%x: tensor<256x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<256x4096xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  return %y : tensor<256x4096xbf16>
}
