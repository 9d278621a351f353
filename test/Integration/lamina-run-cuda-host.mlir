// REQUIRES: ptxas
// The host side of a GPU program against a stand-in driver that logs what
// it is asked (test/Integration/Inputs/fake-libcuda.c; no kernel runs):
// kernel modules load as fatbins, TMA descriptors get the shapes, strides
// and boxes of x[256, 1024] and W[4096, 1024] innermost-first with 128-byte
// swizzle, and the kernel launches on 2 × 16 tiles of 384 threads with
// 192 KiB of dynamic shared memory, opted into first.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %host_cc -shared -fPIC -o %t/libcuda.so.1 %S/Inputs/fake-libcuda.c
// RUN: env LD_LIBRARY_PATH=%t LAMINA_FAKE_CUDA_LOG=%t/log lamina-run %s --target=cuda --random-inputs | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s < %t/log

// OUT: result 0: bf16[256, 4096]

// CHECK:      cuModuleLoadData magic=0xba55ed50
// CHECK-DAG:  cuTensorMapEncodeTiled dtype=9 rank=2 dims=[1024,256] stride=2048 box=[64,128] element_strides=[1,1] interleave=0 swizzle=3 l2=3 oob=0 aligned=1
// CHECK-DAG:  cuTensorMapEncodeTiled dtype=9 rank=2 dims=[1024,4096] stride=2048 box=[64,256] element_strides=[1,1] interleave=0 swizzle=3 l2=3 oob=0 aligned=1
// CHECK:      cuModuleGetFunction main_kernel
// CHECK-NEXT: cuFuncSetAttribute attribute=8 value=196608
// CHECK-NEXT: cuLaunchKernel grid=(32,1,1) block=(384,1,1) smem=196608

func.func @main(%x: tensor<256x1024xbf16>, %w: tensor<4096x1024xbf16>, %b: tensor<4096xbf16>) -> tensor<256x4096xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<256x1024xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<256x4096xbf16>
  return %y : tensor<256x4096xbf16>
}
