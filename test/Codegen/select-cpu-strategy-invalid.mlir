// RUN: lamina-opt %s --split-input-file --verify-diagnostics

// Layouts that do not fit their op, and malformed layouts.

func.func @not_a_layout(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'lamina.codegen' must be a #lamina.cpu_matmul or a #lamina.cpu_loop_tiles}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = 16 : i64} : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

func.func @not_a_matmul(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lamina.codegen' lays out the matmul of a linear layer, lamina.matmul or lamina.fused_qkv}}
  %0 = arith.addf %x, %x {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f32>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @block_does_not_divide(%x: tensor<4x8xf32>, %w: tensor<24x8xf32>) -> tensor<4x24xf32> {
  // expected-error @+1 {{weight_block 16 does not divide the static output features of the weight 'tensor<24x8xf32>'}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f32>} : (tensor<4x8xf32>, tensor<24x8xf32>) -> tensor<4x24xf32>
  return %0 : tensor<4x24xf32>
}

// -----

func.func @pairs_of_f32(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{k_group 2 packs pairs of k of bf16 operands with an even depth of at least 4, got 'tensor<4x8xf32>' and 'tensor<32x8xf32>'}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, k_group = 2, accumulator = f32>} : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

func.func @narrow_accumulator(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{accumulator 'bf16' must be f32 or the operands' 'f32'}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = bf16>} : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

func.func @wide_accumulator(%x: tensor<4x8xf32>, %w: tensor<32x8xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{accumulator 'f64' must be f32 or the operands' 'f32'}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f64>} : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

func.func @panels_with_bias(%x: tensor<8x4xf32>, %w: tensor<32x4xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{row_panel 4 needs a matmul without epilogue whose result is its 'f32' accumulator}}
  %0 = lamina.linear "fc" %x, %w bias %b {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, row_panel = 4, accumulator = f32>} : (tensor<8x4xf32>, tensor<32x4xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @panels_do_not_divide(%x: tensor<6x4xf32>, %w: tensor<32x4xf32>) -> tensor<6x32xf32> {
  // expected-error @+1 {{row_panel 4 does not divide the static rows of the 2-D input 'tensor<6x4xf32>'}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, row_panel = 4, accumulator = f32>} : (tensor<6x4xf32>, tensor<32x4xf32>) -> tensor<6x32xf32>
  return %0 : tensor<6x32xf32>
}

// -----

// expected-error @+1 {{weight_block must be positive, got 0}}
func.func private @zero_block() attributes {config = #lamina.cpu_matmul<weight_block = 0, accumulator = f32>}

// -----

// expected-error @+1 {{k_group must be 1 or 2, got 3}}
func.func private @triples() attributes {config = #lamina.cpu_matmul<weight_block = 16, k_group = 3, accumulator = f32>}

// -----

// expected-error @+1 {{accumulator must be a float type, got 'i32'}}
func.func private @integer_sums() attributes {config = #lamina.cpu_matmul<weight_block = 16, accumulator = i32>}

// -----

// expected-error @+1 {{tile sizes are 0 (not tiled) or positive, got -4}}
func.func private @negative_tile() attributes {tiles = #lamina.cpu_tiles<register_rows = -4>}

// -----

// expected-error @+1 {{a cache tile has rows and blocks, got 128 × 0}}
func.func private @rows_only() attributes {tiles = #lamina.cpu_tiles<cache_rows = 128>}

// -----

// expected-error @+1 {{k_chunk 6 must be a multiple of k_step 4}}
func.func private @ragged_chunks() attributes {tiles = #lamina.cpu_tiles<k_step = 4, k_chunk = 6>}

// -----

// expected-error @+1 {{tile sizes are 0 (not tiled) or positive}}
func.func private @negative_loop_tile() attributes {tiles = #lamina.cpu_loop_tiles<elementwise tiles = [1, -16]>}

// -----

// expected-error @+1 {{vector_sizes give one size per tiled dim: 1 for 2 dims}}
func.func private @short_vector_sizes() attributes {tiles = #lamina.cpu_loop_tiles<elementwise tiles = [1, 16] vector_sizes = [16]>}

// -----

// expected-error @+1 {{a row_transpose schedule takes no tiles}}
func.func private @tiled_row_transpose() attributes {tiles = #lamina.cpu_loop_tiles<row_transpose tiles = [1, 8, 0]>}

// -----

// expected-error @+1 {{a matmul schedule needs tile sizes}}
func.func private @untiled_matmul() attributes {tiles = #lamina.cpu_loop_tiles<matmul>}

// -----

func.func @lns_layout(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>> {
  // expected-error @+1 {{'lamina.codegen' lays out float matmuls, not '!lns.num<f = 10>'}}
  %0 = lamina.matmul "fc" %x, %w {lamina.codegen = #lamina.cpu_matmul<weight_block = 16, accumulator = f32>} : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  return %0 : tensor<4x16x!lns.num<f = 10>>
}

// -----

// expected-error @+1 {{row_panel must be 0 (none) or positive, got -4}}
func.func private @negative_panel() attributes {config = #lamina.cpu_matmul<weight_block = 16, row_panel = -4, accumulator = f32>}
