// RUN: lamina-opt %s --lamina-check-layouts --split-input-file -verify-diagnostics

// The layouts of attention sharded by heads, each error path: a
// [Q; K; V] projection in 3 groups sliced other than by whole groups.
module attributes {lamina.world_size = 2 : i64} {
  func.func @slice_across_groups(%qkv: tensor<2x8x96xf32> {lamina.layout = #lamina.layout<S(2, groups = 3)>}) -> tensor<2x8x48xf32> {
    // expected-error @+1 {{slices the sharded axis 2 other than by whole groups; all_gather the value first}}
    %0 = tensor.extract_slice %qkv[0, 0, 16] [2, 8, 48] [1, 1, 1] : tensor<2x8x96xf32> to tensor<2x8x48xf32>
    return %0 : tensor<2x8x48xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @slice_plain_sharded_axis(%x: tensor<2x8x32xf32> {lamina.layout = #lamina.layout<S(2)>}) -> tensor<2x8x16xf32> {
    // expected-error @+1 {{slices the sharded axis 2; all_gather the value first}}
    %0 = tensor.extract_slice %x[0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<2x8x32xf32> to tensor<2x8x16xf32>
    return %0 : tensor<2x8x16xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @rank_reducing_slice(%x: tensor<2x8x32xf32> {lamina.layout = #lamina.layout<S(2)>}) -> tensor<8x32xf32> {
    // expected-error @+1 {{slices a sharded value with dynamic or rank-reducing bounds; all_gather it first}}
    %0 = tensor.extract_slice %x[1, 0, 0] [1, 8, 32] [1, 1, 1] : tensor<2x8x32xf32> to tensor<8x32xf32>
    return %0 : tensor<8x32xf32>
  }
}

// -----

// The groups of [Q; K; V] split into dims that mix them.
module attributes {lamina.world_size = 2 : i64} {
  func.func @expand_across_groups(%qkv: tensor<2x96xf32> {lamina.layout = #lamina.layout<S(1, groups = 3)>}) -> tensor<2x2x48xf32> {
    // expected-error @+1 {{splits the sharded axis 1 (3 groups) into dims that do not keep its groups apart; all_gather the value first}}
    %0 = tensor.expand_shape %qkv [[0], [1, 2]] output_shape [2, 2, 48] : tensor<2x96xf32> into tensor<2x2x48xf32>
    return %0 : tensor<2x2x48xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  // Keys sharded on the contracted dim, queries by heads.
  func.func @scores_of_mixed_layouts(%q: tensor<8x4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %k: tensor<8x8x4xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<8x4x4xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4x4xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
    // expected-error @+1 {{multiplies batches with layouts #lamina.layout<S(0)> and #lamina.layout<S(1)>; both must be sharded alike on the batch dim (the heads), one of them replicated, or both replicated}}
    %0 = linalg.batch_matmul ins(%q, %k : tensor<8x4x8xf32>, tensor<8x8x4xf32>) outs(%acc : tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
    return %0 : tensor<8x4x4xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @mask_not_broadcast_along_heads(%s: tensor<2x4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %m: tensor<1x4x8x8xi1>) -> tensor<2x4x8x8xf32> {
    // expected-error @+1 {{fills a value sharded on axis 1 with a mask that is not broadcast along it}}
    %0 = lamina.masked_fill %s, %m value 0.0 : tensor<2x4x8x8xf32>, tensor<1x4x8x8xi1>
    return %0 : tensor<2x4x8x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @sharded_mask(%s: tensor<2x4x8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %m: tensor<1x4x8x8xi1> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x4x8x8xf32> {
    // expected-error @+1 {{takes a mask with layout #lamina.layout<S(1)>; the mask must be replicated}}
    %0 = lamina.masked_fill %s, %m value 0.0 : tensor<2x4x8x8xf32>, tensor<1x4x8x8xi1>
    return %0 : tensor<2x4x8x8xf32>
  }
}

// -----

// A row-parallel weight in groups contracts only an input in the same
// groups.
module attributes {lamina.world_size = 2 : i64} {
  func.func @grouped_row_parallel(%x: tensor<4x96xf32> {lamina.layout = #lamina.layout<S(1)>}, %w: tensor<16x96xf32> {lamina.layout = #lamina.layout<S(1, groups = 3)>}) -> tensor<4x16xf32> {
    // expected-error @+1 {{is row parallel (weight S(1)) and needs its input sharded on the last axis (a column-parallel layer before it, or a fwd_post scatter), but the input has layout #lamina.layout<S(1)>}}
    %0 = lamina.matmul %x, %w : (tensor<4x96xf32>, tensor<16x96xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}

// -----

// A column-parallel [Q; K; V] projection needs its bias in the same groups.
module attributes {lamina.world_size = 2 : i64} {
  func.func @bias_not_grouped(%x: tensor<4x32xf32>, %w: tensor<96x32xf32> {lamina.layout = #lamina.layout<S(0, groups = 3)>}, %b: tensor<96xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x32xf32> {
    %0 = lamina.matmul %x, %w : (tensor<4x32xf32>, tensor<96x32xf32>) -> tensor<4x96xf32>
    // expected-error @+1 {{produces output features sharded over ranks (column parallel), so its bias must be sharded on axis 0 too, but the bias has layout #lamina.layout<S(0)>}}
    %1 = lamina.bias_add %0, %b : tensor<4x96xf32>, tensor<96xf32>
    %2 = tensor.extract_slice %1[0, 0] [4, 32] [1, 1] : tensor<4x96xf32> to tensor<4x32xf32>
    return %2 : tensor<4x32xf32>
  }
}

// -----

// A grouped value cannot be all-gathered as one block per rank.
module attributes {lamina.world_size = 2 : i64} {
  func.func @gather_groups(%x: tensor<4x96xf32> {lamina.layout = #lamina.layout<S(1, groups = 3)>}) -> tensor<4x96xf32> {
    // expected-error @+1 {{sync #lamina.sync<fwd_post, all_gather, axis = 1> on the value needs a value sharded on axis 1, but its input has layout #lamina.layout<S(1, groups = 3)>}}
    %0 = lamina.sync %x <fwd_post, all_gather, axis = 1> : tensor<4x96xf32>
    return %0 : tensor<4x96xf32>
  }
}

// -----

// groups must be positive.
// expected-error @+1 {{a sharded axis has at least one group, got 0}}
func.func @no_groups(%x: tensor<4x96xf32> {lamina.layout = #lamina.layout<S(1, groups = 0)>}) {
  return
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @concat_along_heads(%a: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %b: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x8x8xf32> {
    // expected-error @+1 {{concatenates along the sharded axis 1; all_gather the values first}}
    %0 = tensor.concat dim(1) %a, %b : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
    return %0 : tensor<2x8x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @concat_of_two_shardings(%a: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %b: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<2x4x16xf32> {
    // expected-error @+1 {{concatenates values sharded differently; all_gather them first}}
    %0 = tensor.concat dim(2) %a, %b : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
    return %0 : tensor<2x4x16xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  // The largest score over heads held by different ranks.
  func.func @max_over_heads(%s: tensor<2x4x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x8xf32> {
    %init = arith.constant dense<0xFF800000> : tensor<2x8xf32>
    // expected-error @+1 {{reduces over the sharded axis 1 other than by adding; all_gather the value first}}
    %0 = linalg.reduce ins(%s : tensor<2x4x8xf32>) outs(%init : tensor<2x8xf32>) dimensions = [1]
      (%in: f32, %out: f32) {
        %m = arith.maximumf %in, %out : f32
        linalg.yield %m : f32
      }
    return %0 : tensor<2x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @max_of_partial_sums(%x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>}, %w: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4xf32> {
    %p = lamina.linear "fc" %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %init = arith.constant dense<0xFF800000> : tensor<4xf32>
    // expected-error @+1 {{reduces partial sums (layout P) other than by adding them; add a fwd_post all_reduce sync before it}}
    %0 = linalg.reduce ins(%p : tensor<4x8xf32>) outs(%init : tensor<4xf32>) dimensions = [1]
      (%in: f32, %out: f32) {
        %m = arith.maximumf %in, %out : f32
        linalg.yield %m : f32
      }
    return %0 : tensor<4xf32>
  }
}

// -----

// Rotary embeddings rotate pairs of the last axis: a value sharded on it
// cannot be rotated locally.
module attributes {lamina.world_size = 2 : i64} {
  func.func @rope_last_axis(%q: tensor<2x8x4x32xf32> {lamina.layout = #lamina.layout<S(3)>}, %c: tensor<1x8x1x16xf32>) -> tensor<2x8x4x32xf32> {
    // expected-error @+1 {{rotates pairs of a value sharded on its last axis 3; shard it on another axis (its heads)}}
    %0 = lamina.rope %q, %c, %c interleaved : tensor<2x8x4x32xf32>, tensor<1x8x1x16xf32>
    return %0 : tensor<2x8x4x32xf32>
  }
}

// -----

// Sharded on the positions, the tables would need this rank's rows.
module attributes {lamina.world_size = 2 : i64} {
  func.func @rope_tables_not_broadcast(%q: tensor<2x8x4x32xf32> {lamina.layout = #lamina.layout<S(1)>}, %c: tensor<1x8x1x16xf32>) -> tensor<2x8x4x32xf32> {
    // expected-error @+1 {{rotates a value sharded on axis 1 with tables that are not broadcast along it}}
    %0 = lamina.rope %q, %c, %c interleaved : tensor<2x8x4x32xf32>, tensor<1x8x1x16xf32>
    return %0 : tensor<2x8x4x32xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @rope_sharded_tables(%q: tensor<2x8x4x32xf32>, %c: tensor<1x8x1x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<2x8x4x32xf32> {
    // expected-error @+1 {{takes tables with layouts #lamina.layout<S(1)> and #lamina.layout<S(1)>; the tables must be replicated}}
    %0 = lamina.rope %q, %c, %c interleaved : tensor<2x8x4x32xf32>, tensor<1x8x1x16xf32>
    return %0 : tensor<2x8x4x32xf32>
  }
}
