// RUN: lamina-opt %s --lamina-generate-backward --lamina-decompose --lamina-fuse-epilogues --cse --convert-lamina-to-gpu > %t.wgmma.mlir
// RUN: FileCheck %s --check-prefix=WGMMA < %t.wgmma.mlir
// RUN: FileCheck %s --check-prefix=FUSED < %t.wgmma.mlir
// RUN: lamina-opt %s --lamina-generate-backward --lamina-decompose --lamina-fuse-epilogues --cse "--convert-lamina-to-gpu=chip=sm_80" | FileCheck %s --check-prefix=SM80

// An MLP, fc2(gelu(fc1(x))): dH = dY·W2 is a matmul whose only use is gelu′
// at the saved pre-activation p1 (an argument of the backward), so the
// derivative is its epilogue: the wgmma kernel reads p1 in aligned pairs
// next to the accumulators, and no element-wise kernel (the only launches
// without shared memory) is left in the backward. The forward's activation
// between the layers (it saves both p1 and h) is an element-wise kernel.

// WGMMA-LABEL: func.func @main_forward(
// WGMMA: wgmma.mma_async
// WGMMA: gpu.launch blocks({{.*}}) in ({{%.+}} = %c128{{(_[0-9]+)?}}, {{.*}}) threads({{.*}}) in ({{%.+}} = %c256{{.*}}) {{[{]$}}
// WGMMA: math.tanh
// WGMMA: wgmma.mma_async
// WGMMA-LABEL: func.func @main_backward(
// WGMMA-SAME: %[[P1:arg6]]: memref<128x256xbf16>
// WGMMA: %[[DP1:[a-z0-9_]+]], %{{.+}} = gpu.alloc async [%{{.+}}] () : memref<128x256xbf16>
// WGMMA: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 256, k = 16>
// WGMMA: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA: vector.load %[[P1]][%{{.+}}, %{{.+}}] {alignment = 4 : i64} : memref<128x256xbf16>, vector<2xbf16>
// WGMMA: math.tanh
// WGMMA: vector.store %{{.+}}, %[[DP1]]

// SM80-LABEL: func.func @main_backward(
// SM80: nvvm.mma.sync
// SM80: vector.load %arg6[%{{.+}}, %{{.+}}] {alignment = 4 : i64} : memref<128x256xbf16>, vector<2xbf16>
// SM80: math.tanh

// FUSED-LABEL: func.func @main_backward(
// FUSED-NOT: gpu.launch {{.*}}threads({{.*}}) in ({{[^)]*}}) {{[{]$}}
// FUSED: return
func.func @main(%x: tensor<128x64xbf16>, %w1: tensor<256x64xbf16>, %b1: tensor<256xbf16>, %w2: tensor<64x256xbf16>, %b2: tensor<64xbf16>) -> tensor<128x64xbf16> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh
      : (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  %y = lamina.linear "fc2" %h, %w2 bias %b2 : (tensor<128x256xbf16>, tensor<64x256xbf16>, tensor<64xbf16>) -> tensor<128x64xbf16>
  return %y : tensor<128x64xbf16>
}

