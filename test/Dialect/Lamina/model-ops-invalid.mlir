// RUN: lamina-opt %s -split-input-file -verify-diagnostics

func.func @embedding_weight_not_2d(%idx: tensor<2x8xi64>, %w: tensor<64x32x1xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{takes a static [vocabulary, features] weight, got 'tensor<64x32x1xf32>'}}
  %0 = lamina.embedding "e" %idx, %w : (tensor<2x8xi64>, tensor<64x32x1xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

func.func @embedding_result_shape(%idx: tensor<2x8xi64>, %w: tensor<64x32xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{the result must have the indices' shape followed by the 32 features, [2, 8, 32], got 'tensor<2x8x16xf32>'}}
  %0 = lamina.embedding "e" %idx, %w : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @embedding_padding_outside(%idx: tensor<2x8xi64>, %w: tensor<64x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{padding_idx 64 is outside the 64 rows}}
  %0 = lamina.embedding "e" %idx, %w padding_idx 64 : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

func.func @embedding_float_indices(%idx: tensor<2x8xf32>, %w: tensor<64x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 64-bit signless integer values}}
  %0 = lamina.embedding "e" %idx, %w : (tensor<2x8xf32>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

func.func @embedding_grad_cotangent(%idx: tensor<2x8xi64>, %dy: tensor<2x7x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{the cotangent must have the indices' shape followed by the 32 features, [2, 8, 32], got 'tensor<2x7x32xf32>'}}
  %0 = lamina.embedding_grad %idx, %dy : (tensor<2x8xi64>, tensor<2x7x32xf32>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @embedding_grad_padding(%idx: tensor<2x8xi64>, %dy: tensor<2x8x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{padding_idx -1 is outside the 64 rows}}
  %0 = lamina.embedding_grad %idx, %dy padding_idx -1 : (tensor<2x8xi64>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

func.func @masked_fill_rank(%s: tensor<2x4x8x8xf32>, %m: tensor<8x8xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{takes a mask of the input's rank 4, got rank 2}}
  %0 = lamina.masked_fill %s, %m value 0.0 : tensor<2x4x8x8xf32>, tensor<8x8xi1>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @masked_fill_dim(%s: tensor<2x4x8x8xf32>, %m: tensor<1x2x8x8xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{mask dim 1 is 2: it must be 1 (broadcast) or the input's 4}}
  %0 = lamina.masked_fill %s, %m value 0.0 : tensor<2x4x8x8xf32>, tensor<1x2x8x8xi1>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @cross_entropy_logits(%x: tensor<2x16x64xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  // expected-error @+1 {{takes static logits [N, classes], got 'tensor<2x16x64xf32>'}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 : (tensor<2x16x64xf32>, tensor<16xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_targets(%x: tensor<16x64xf32>, %t: tensor<15xi64>) -> tensor<f32> {
  // expected-error @+1 {{takes one target per row of the logits, tensor<16xi64>, got 'tensor<15xi64>'}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 : (tensor<16x64xf32>, tensor<15xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_result(%x: tensor<16x64xf32>, %t: tensor<16xi64>) -> tensor<1xf32> {
  // expected-error @+1 {{result must be 'tensor<f32>' (the reduced loss), got 'tensor<1xf32>'}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @cross_entropy_per_row_result(%x: tensor<16x64xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  // expected-error @+1 {{result must be 'tensor<16xf32>' (one loss per row), got 'tensor<f32>'}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 none : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_two_reductions(%x: tensor<16x64xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  // expected-error @+1 {{takes one reduction: sum or none}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 sum none : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_per_row_cotangent(%x: tensor<16x64xf32>, %t: tensor<16xi64>, %dl: tensor<f32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{the cotangent must be 'tensor<16xf32>' (one loss per row), got 'tensor<f32>'}}
  %0 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 none : (tensor<16x64xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

func.func @cross_entropy_grad_result(%x: tensor<16x64xf32>, %t: tensor<16xi64>, %dl: tensor<f32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{result must have the logits' type 'tensor<16x64xf32>', got 'tensor<16x32xf32>'}}
  %0 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 : (tensor<16x64xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

func.func @cross_entropy_grad_targets(%x: tensor<16x64xf32>, %t: tensor<16x1xi64>, %dl: tensor<f32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{takes one target per row of the logits, tensor<16xi64>, got 'tensor<16x1xi64>'}}
  %0 = lamina.cross_entropy_grad %x, %t, %dl ignore_index -1 : (tensor<16x64xf32>, tensor<16x1xi64>, tensor<f32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// A vocabulary-parallel loss names its shards and its rank together (the
// custom syntax takes both; the generic form could drop one).
func.func @cross_entropy_shards_without_rank(%x: tensor<16x32xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  // expected-error @+1 {{takes its rank exactly when it is split into shards (vocabulary parallel)}}
  %0 = "lamina.cross_entropy"(%x, %t) {ignore_index = -1 : i64, shards = 2 : i64} : (tensor<16x32xf32>, tensor<16xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_rank_without_shards(%x: tensor<16x32xf32>, %t: tensor<16xi64>, %dl: tensor<f32>, %r: index) -> tensor<16x32xf32> {
  // expected-error @+1 {{takes its rank exactly when it is split into shards (vocabulary parallel)}}
  %0 = "lamina.cross_entropy_grad"(%x, %t, %dl, %r) {ignore_index = -1 : i64} : (tensor<16x32xf32>, tensor<16xi64>, tensor<f32>, index) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

func.func @cross_entropy_one_shard(%x: tensor<16x32xf32>, %t: tensor<16xi64>, %r: index) -> tensor<f32> {
  // expected-error @+1 {{attribute 'shards' failed to satisfy constraint}}
  %0 = lamina.cross_entropy %x, %t ignore_index -1 shards 1 rank %r : (tensor<16x32xf32>, tensor<16xi64>, index) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @rope_odd_width(%x: tensor<2x7xf32>, %c: tensor<2x3xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{rotates pairs of the last dim: its size must be static and even, got 'tensor<2x7xf32>'}}
  %0 = lamina.rope %x, %c, %c interleaved : tensor<2x7xf32>, tensor<2x3xf32>
  return %0 : tensor<2x7xf32>
}

// -----

func.func @rope_one_angle_per_element(%x: tensor<2x8xf32>, %c: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{takes one angle per pair: the tables' last dim must be 4, got 8}}
  %0 = lamina.rope %x, %c, %c halves : tensor<2x8xf32>, tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rope_table_rank(%x: tensor<2x3x8xf32>, %c: tensor<3x4xf32>) -> tensor<2x3x8xf32> {
  // expected-error @+1 {{takes tables of the input's rank 3 (at least 1), got rank 2}}
  %0 = lamina.rope %x, %c, %c halves : tensor<2x3x8xf32>, tensor<3x4xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

func.func @rope_table_not_broadcast(%x: tensor<2x3x8xf32>, %c: tensor<1x2x4xf32>) -> tensor<2x3x8xf32> {
  // expected-error @+1 {{tables dim 1 is 2: it must be 1 (broadcast) or the input's 3}}
  %0 = lamina.rope %x, %c, %c interleaved : tensor<2x3x8xf32>, tensor<1x2x4xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

func.func @rope_table_type(%x: tensor<2x8xf32>, %c: tensor<2x4xbf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{takes tables of the input's element type 'f32', got 'bf16'}}
  %0 = lamina.rope %x, %c, %c interleaved : tensor<2x8xf32>, tensor<2x4xbf16>
  return %0 : tensor<2x8xf32>
}
