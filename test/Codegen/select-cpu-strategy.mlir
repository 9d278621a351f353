// RUN: lamina-opt %s --lamina-select-cpu-strategy --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-select-cpu-strategy="vector-bits=512 bf16-dots" --split-input-file | FileCheck %s --check-prefix=WIDE
// RUN: lamina-opt %s --lamina-select-cpu-strategy=threads=2 --split-input-file | FileCheck %s --check-prefix=THREADS

// A float weight whose 32 output features 16 divides is packed in blocks of
// 16, summed in its own type; 24 features stay a plain matmul, and so do
// LNS numbers and a dynamic weight.
// CHECK-LABEL: func.func @blocks
// CHECK: lamina.linear_act "fc" {{.*}}lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f32
// CHECK: lamina.linear "odd"
// CHECK-NOT: lamina.codegen
// CHECK: lamina.matmul "lns"
// CHECK-NOT: lamina.codegen
// CHECK: lamina.matmul "dynamic"
// CHECK-NOT: lamina.codegen
// CHECK: return
func.func @blocks(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>, %w2: tensor<24x8xf32>, %xl: tensor<4x8x!lns.num<f = 10>>, %wl: tensor<16x8x!lns.num<f = 10>>, %wd: tensor<?x8xf32>) -> (tensor<4x32xf32>, tensor<4x24xf32>, tensor<4x16x!lns.num<f = 10>>, tensor<4x?xf32>) {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %1 = lamina.linear "odd" %x, %w2 : (tensor<4x8xf32>, tensor<24x8xf32>) -> tensor<4x24xf32>
  %2 = lamina.matmul "lns" %xl, %wl : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  %3 = lamina.matmul "dynamic" %x, %wd : (tensor<4x8xf32>, tensor<?x8xf32>) -> tensor<4x?xf32>
  return %0, %1, %2, %3 : tensor<4x32xf32>, tensor<4x24xf32>, tensor<4x16x!lns.num<f = 10>>, tensor<4x?xf32>
}

// -----

// bf16 operands sum in f32; with AVX512-BF16's dot products (bf16-dots) an
// even depth K >= 4 packs pairs of k, K = 2 does not.
// CHECK-LABEL: func.func @bf16
// CHECK: lamina.matmul "deep" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
// CHECK: lamina.matmul "shallow" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
// WIDE-LABEL: func.func @bf16
// WIDE: lamina.matmul "deep" {{.*}}#lamina.cpu_matmul<weight_block = 16, k_group = 2, accumulator = f32
// WIDE: lamina.matmul "shallow" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
func.func @bf16(%x: tensor<8x6xbf16>, %w: tensor<32x6xbf16>, %x2: tensor<8x2xbf16>, %w2: tensor<32x2xbf16>) -> (tensor<8x32xbf16>, tensor<8x32xbf16>) {
  %0 = lamina.matmul "deep" %x, %w : (tensor<8x6xbf16>, tensor<32x6xbf16>) -> tensor<8x32xbf16>
  %1 = lamina.matmul "shallow" %x2, %w2 : (tensor<8x2xbf16>, tensor<32x2xbf16>) -> tensor<8x32xbf16>
  return %0, %1 : tensor<8x32xbf16>, tensor<8x32xbf16>
}

// -----

// The backward's dW = dyᵀ·x reads its transposed input in panels of the
// register tile's rows: 4 with AVX2, 8 with AVX-512. Not so: 12 rows (not a
// multiple of 8), a bias epilogue, a matmul whose activation derivative
// joins it, an input that is no transpose.
// CHECK-LABEL: func.func @panels
// CHECK: lamina.matmul "dw" {{.*}}#lamina.cpu_matmul<weight_block = 16, row_panel = 4, accumulator = f32
// CHECK: lamina.matmul "dw12" {{.*}}#lamina.cpu_matmul<weight_block = 16, row_panel = 4, accumulator = f32
// CHECK: lamina.linear "biased" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
// CHECK: lamina.matmul "dh" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
// CHECK: lamina.matmul "plain" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
// WIDE-LABEL: func.func @panels
// WIDE: lamina.matmul "dw" {{.*}}#lamina.cpu_matmul<weight_block = 16, row_panel = 8, accumulator = f32
// WIDE: lamina.matmul "dw12" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32
func.func @panels(%dy: tensor<4x16xf32>, %dy12: tensor<4x12xf32>, %w: tensor<32x4xf32>, %b: tensor<32xf32>, %x: tensor<16x4xf32>, %h: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<12x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %e = tensor.empty() : tensor<16x4xf32>
  %t = linalg.transpose ins(%dy : tensor<4x16xf32>) outs(%e : tensor<16x4xf32>) permutation = [1, 0]
  %0 = lamina.matmul "dw" %t, %w : (tensor<16x4xf32>, tensor<32x4xf32>) -> tensor<16x32xf32>
  %e12 = tensor.empty() : tensor<12x4xf32>
  %t12 = linalg.transpose ins(%dy12 : tensor<4x12xf32>) outs(%e12 : tensor<12x4xf32>) permutation = [1, 0]
  %1 = lamina.matmul "dw12" %t12, %w : (tensor<12x4xf32>, tensor<32x4xf32>) -> tensor<12x32xf32>
  %2 = lamina.linear "biased" %t, %w bias %b : (tensor<16x4xf32>, tensor<32x4xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  %3 = lamina.matmul "dh" %t, %w : (tensor<16x4xf32>, tensor<32x4xf32>) -> tensor<16x32xf32>
  %4 = lamina.activation_grad "fc" gelu_tanh %h, %3 : tensor<16x32xf32>
  %5 = lamina.matmul "plain" %x, %w : (tensor<16x4xf32>, tensor<32x4xf32>) -> tensor<16x32xf32>
  return %0, %1, %2, %4, %5 : tensor<16x32xf32>, tensor<12x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// The tiles from the static shape. 512 rows: cache tiles of 128 rows × 2
// blocks (the 4 blocks' rows of x, 128 KiB, do not make 8 blocks), register
// tiles of 4 rows × 1 block, k in steps of 4. 4 rows: one register tile's
// rows, each block its own tile. With two threads each takes 2 of the 4
// blocks, too few for a cache tile. 512-bit vectors: register tiles of 8
// rows × 2 blocks, all of the cache tile's. A depth of 1 is an outer
// product, and dynamic rows have no static plan: no tiles.
// CHECK-LABEL: func.func @tiles
// CHECK: lamina.matmul "tall" {{.*}}tiles = <cache_rows = 128, cache_blocks = 2, register_rows = 4, register_blocks = 1, k_step = 4>>
// CHECK: lamina.matmul "short" {{.*}}tiles = <register_blocks = 1, k_step = 4>>
// CHECK: lamina.matmul "outer" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32>}
// CHECK: lamina.matmul "dynamic" {{.*}}#lamina.cpu_matmul<weight_block = 16, accumulator = f32>}
// THREADS-LABEL: func.func @tiles
// THREADS: lamina.matmul "tall" {{.*}}tiles = <register_rows = 4, register_blocks = 1, k_step = 4, thread_blocks = 2>>
// WIDE-LABEL: func.func @tiles
// WIDE: lamina.matmul "tall" {{.*}}tiles = <cache_rows = 128, cache_blocks = 2, register_rows = 8, k_step = 4>>
func.func @tiles(%x: tensor<512x64xf32>, %w: tensor<64x64xf32>, %x4: tensor<4x64xf32>, %x1: tensor<8x1xf32>, %w1: tensor<64x1xf32>, %xd: tensor<?x64xf32>) -> (tensor<512x64xf32>, tensor<4x64xf32>, tensor<8x64xf32>, tensor<?x64xf32>) {
  %0 = lamina.matmul "tall" %x, %w : (tensor<512x64xf32>, tensor<64x64xf32>) -> tensor<512x64xf32>
  %1 = lamina.matmul "short" %x4, %w : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %2 = lamina.matmul "outer" %x1, %w1 : (tensor<8x1xf32>, tensor<64x1xf32>) -> tensor<8x64xf32>
  %3 = lamina.matmul "dynamic" %xd, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %0, %1, %2, %3 : tensor<512x64xf32>, tensor<4x64xf32>, tensor<8x64xf32>, tensor<?x64xf32>
}
