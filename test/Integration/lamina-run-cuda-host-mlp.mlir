// REQUIRES: ptxas
// Two layers on the stand-in driver (Inputs/fake-libcuda.c): the hidden
// activations are allocated on the device and freed, the layers launch in
// order with their own geometry. sm_90a with 64 rows: 64×64 tiles, 256
// threads, 128 KiB ring; sm_80: 128×128 tiles of 4 warps, 60 KiB ring (also
// opted into: above 48 KiB).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %host_cc -shared -fPIC -o %t/libcuda.so.1 %S/Inputs/fake-libcuda.c
// RUN: env LD_LIBRARY_PATH=%t LAMINA_FAKE_CUDA_LOG=%t/log90 lamina-run %s --target=cuda --random-inputs | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=SM90 < %t/log90
// RUN: env LD_LIBRARY_PATH=%t LAMINA_FAKE_CUDA_LOG=%t/log80 lamina-run %s --target=cuda --chip=sm_80 --random-inputs | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=SM80 < %t/log80

// OUT: result 0: bf16[64, 128]

// SM90:      cuModuleLoadData magic=0xba55ed50
// SM90:      cuModuleLoadData magic=0xba55ed50
// SM90:      cuTensorMapEncodeTiled dtype=9 rank=2 dims=[128,64] stride=256 box=[64,64]
// SM90:      cuTensorMapEncodeTiled dtype=9 rank=2 dims=[128,256] stride=256 box=[64,64]
// SM90:      cuLaunchKernel grid=(4,1,1) block=(256,1,1) smem=131072
// SM90:      cuTensorMapEncodeTiled dtype=9 rank=2 dims=[256,64] stride=512 box=[64,64]
// SM90:      cuTensorMapEncodeTiled dtype=9 rank=2 dims=[256,128] stride=512 box=[64,64]
// SM90:      cuLaunchKernel grid=(2,1,1) block=(256,1,1) smem=131072
// SM90-NOT:  cuLaunchKernel

// SM80-NOT:  cuTensorMapEncodeTiled
// SM80:      cuFuncSetAttribute attribute=8 value=61440
// SM80-NEXT: cuLaunchKernel grid=(2,1,1) block=(128,1,1) smem=61440
// SM80:      cuFuncSetAttribute attribute=8 value=61440
// SM80-NEXT: cuLaunchKernel grid=(1,1,1) block=(128,1,1) smem=61440
// SM80-NOT:  cuLaunchKernel

func.func @main(%x: tensor<64x128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>,
                %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<64x128xbf16> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation relu
      : (tensor<64x128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>) -> tensor<64x256xbf16>
  %y = lamina.linear "fc2" %h, %w2 bias %b2
      : (tensor<64x256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}
