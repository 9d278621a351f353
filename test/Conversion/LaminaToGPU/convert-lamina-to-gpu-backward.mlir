// RUN: lamina-opt %s -split-input-file --lamina-generate-backward --lamina-decompose --lamina-fuse-epilogues --cse "--convert-lamina-to-gpu=chip=sm_80" | FileCheck %s

// The backward of y = gelu(x·Wᵀ + b), x [64, 32], W [48, 32], on device
// buffers. Expected kernels, in the order the rules emit them (derived from
// the math, not from the pass):
//   dp = dy · gelu′(p)   element-wise: 64·48 = 3072 elements, 12 blocks of 256
//   db = Σ_rows dp       column sums: ⌈48 / 32⌉ = 2 blocks, 8×32 f32 partials
//   Wᵀ [32, 48]          transpose: grid (⌈32/32⌉, ⌈48/32⌉) = (1, 2), rows
//                        padded to 34 bf16 (17 words): 32·34·2 = 2176 bytes
//   dx = dp · (Wᵀ)ᵀ      mma.sync, one 128×128 tile of 128 threads, into dx
//   dpᵀ [48, 64], xᵀ [32, 64]   transposes: grids (2, 2) and (2, 1)
//   dW = dpᵀ · (xᵀ)ᵀ     mma.sync into dW
// The four temporaries (dp, Wᵀ, dpᵀ, xᵀ) are freed at the end.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<64x32xbf16>, %[[W:[a-z0-9]+]]: memref<48x32xbf16>, %{{[a-z0-9]+}}: memref<48xbf16>, %[[P:[a-z0-9]+]]: memref<64x48xbf16>, %[[DY:[a-z0-9]+]]: memref<64x48xbf16>, %[[DX:[a-z0-9]+]]: memref<64x32xbf16>, %[[DW:[a-z0-9]+]]: memref<48x32xbf16>, %[[DB:[a-z0-9]+]]: memref<48xbf16>)
// CHECK: %[[DP:[a-z0-9_]+]], %{{.+}} = gpu.alloc async [%{{.+}}] () : memref<64x48xbf16>
// CHECK: %[[PF:.+]] = memref.collapse_shape %[[P]] {{\[}}[0, 1]] : memref<64x48xbf16> into memref<3072xbf16>
// CHECK: %[[DYF:.+]] = memref.collapse_shape %[[DY]] {{\[}}[0, 1]]
// CHECK: %[[DPF:.+]] = memref.collapse_shape %[[DP]] {{\[}}[0, 1]]
// CHECK: gpu.launch blocks({{.*}}) in ({{%.+}} = %c12, {{.*}}) threads({{.*}}) in ({{%.+}} = %c256,
// CHECK: memref.load %[[PF]]
// CHECK: memref.load %[[DYF]]
// CHECK: math.tanh
// CHECK: memref.store %{{.+}}, %[[DPF]]
// CHECK: gpu.launch blocks({{.*}}) in ({{%.+}} = %c2{{(_[0-9]+)?}}, {{.*}}) threads({{.*}}) in ({{%.+}} = %c256{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %c1024_i32
// CHECK: scf.for
// CHECK: memref.load %[[DP]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[DB]]
// CHECK: %[[WT:[a-z0-9_]+]], %{{.+}} = gpu.alloc async [%{{.+}}] () : memref<32x48xbf16>
// CHECK: gpu.launch blocks({{.*}}) in ({{%.+}} = %c1{{(_[0-9]+)?}}, {{%.+}} = %c2{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %c2176_i32
// CHECK: memref.load %[[W]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[WT]]
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{%.+}} = %c128,
// CHECK: nvgpu.device_async_copy %[[DP]]
// CHECK: nvgpu.device_async_copy %[[WT]]
// CHECK: nvvm.mma.sync
// CHECK: vector.store %{{.+}}, %[[DX]]
// CHECK: %[[DPT:[a-z0-9_]+]], %{{.+}} = gpu.alloc async [%{{.+}}] () : memref<48x64xbf16>
// CHECK: gpu.launch blocks({{.*}}) in ({{%.+}} = %c2{{(_[0-9]+)?}}, {{%.+}} = %c2{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %c2176_i32
// CHECK: memref.store %{{.+}}, %[[DPT]]
// CHECK: %[[XT:[a-z0-9_]+]], %{{.+}} = gpu.alloc async [%{{.+}}] () : memref<32x64xbf16>
// CHECK: gpu.launch blocks({{.*}}) in ({{%.+}} = %c2{{(_[0-9]+)?}}, {{%.+}} = %c1{{(_[0-9]+)?}}, {{.*}}) dynamic_shared_memory_size %c2176_i32
// CHECK: memref.load %[[X]]
// CHECK: memref.store %{{.+}}, %[[XT]]
// CHECK: gpu.launch
// CHECK: nvgpu.device_async_copy %[[DPT]]
// CHECK: nvgpu.device_async_copy %[[XT]]
// CHECK: nvvm.mma.sync
// CHECK: vector.store %{{.+}}, %[[DW]]
// CHECK: gpu.dealloc async [%{{.+}}] %[[DP]]
// CHECK: gpu.dealloc async [%{{.+}}] %[[WT]]
// CHECK: gpu.dealloc async [%{{.+}}] %[[DPT]]
// CHECK: gpu.dealloc async [%{{.+}}] %[[XT]]
// CHECK-NOT: gpu.dealloc
// CHECK: return
func.func @main(%x: tensor<64x32xbf16>, %w: tensor<48x32xbf16>, %b: tensor<48xbf16>) -> tensor<64x48xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : (tensor<64x32xbf16>, tensor<48x32xbf16>, tensor<48xbf16>) -> tensor<64x48xbf16>
  return %y : tensor<64x48xbf16>
}

// -----

// x read by two layers: dx = dy_q·W_q + dy_k·W_k, the two products summed
// by an element-wise kernel into dx (64·32 = 2048 elements, 8 blocks); xᵀ
// is computed once for both dW (--cse).

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<64x32xbf16>, {{.*}}, %[[DX:[a-z0-9]+]]: memref<64x32xbf16>, %{{[a-z0-9]+}}: memref<48x32xbf16>, %{{[a-z0-9]+}}: memref<48x32xbf16>)
// CHECK: gpu.alloc async [%{{.+}}] () : memref<32x64xbf16>
// CHECK-NOT: gpu.alloc async [%{{.+}}] () : memref<32x64xbf16>
// CHECK: %[[DXF:.+]] = memref.collapse_shape %[[DX]] {{\[}}[0, 1]] : memref<64x32xbf16> into memref<2048xbf16>
// CHECK: gpu.launch blocks({{.*}}) in ({{%.+}} = %c8, {{.*}}) threads({{.*}}) in ({{%.+}} = %c256
// CHECK: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK: memref.store %{{.+}}, %[[DXF]]
func.func @main(%x: tensor<64x32xbf16>, %wq: tensor<48x32xbf16>, %wk: tensor<48x32xbf16>) -> (tensor<64x48xbf16>, tensor<64x48xbf16>) {
  %q = lamina.linear "q" %x, %wq : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xbf16>
  %k = lamina.linear "k" %x, %wk : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xbf16>
  return %q, %k : tensor<64x48xbf16>, tensor<64x48xbf16>
}
