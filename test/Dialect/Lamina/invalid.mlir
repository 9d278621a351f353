// RUN: lamina-opt %s -split-input-file -verify-diagnostics

func.func @width_mismatch(%x: tensor<4x8xf32>, %w: tensor<16x7xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{input width 8 does not match in_features 7 of the weight [out_features, in_features]}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8xf32>, tensor<16x7xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @weight_not_2d(%x: tensor<4x8xf32>, %w: tensor<16x8x1xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{weight must be 2-D [out_features, in_features], got 'tensor<16x8x1xf32>'}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8xf32>, tensor<16x8x1xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @result_rank(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{result rank 2 differs from the input rank 3}}
  %0 = lamina.linear "l" %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @result_batch(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x5x16xf32> {
  // expected-error @+1 {{result dimension 1 is 5 but the input's is 4}}
  %0 = lamina.linear "l" %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x5x16xf32>
  return %0 : tensor<2x5x16xf32>
}

// -----

func.func @result_width(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x15xf32> {
  // expected-error @+1 {{result width 15 does not match out_features 16}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x15xf32>
  return %0 : tensor<4x15xf32>
}

// -----

func.func @float_and_lns(%x: tensor<4x8xf32>, %w: tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16xf32> {
  // expected-error @+1 {{input and weight must both be floats or both LNS numbers, got 'f32' and '!lns.num<f = 10>'}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8xf32>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @lns_result_base(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 12>> {
  // expected-error @+1 {{LNS result must have the input's base '!lns.num<f = 10>', got '!lns.num<f = 12>'}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 12>>) -> tensor<4x16x!lns.num<f = 12>>
  return %0 : tensor<4x16x!lns.num<f = 12>>
}

// -----

func.func @mixed_floats(%x: tensor<4x8xbf16>, %w: tensor<16x8xf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{input and weight element types differ: 'bf16' and 'f16'}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8xbf16>, tensor<16x8xf16>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @narrowing_result(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{result element type must be the input's ('f32') or f32, got 'bf16'}}
  %0 = lamina.linear "l" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

func.func @bias_shape(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias must have shape [16] (one value per output feature), got 'tensor<8xf32>'}}
  %0 = lamina.linear "l" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @bias_kind(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16x!lns.num<f = 10>>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias element type '!lns.num<f = 10>' does not go with 'f32'}}
  %0 = lamina.linear "l" %x, %w bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16x!lns.num<f = 10>>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @separate_bias_requires_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expected 'bias'}}
  %0 = lamina.linear_separate_bias "l" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @act_requires_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expected 'bias'}}
  %0 = lamina.linear_act "l" %x, %w activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_requires_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expected 'bias'}}
  %0 = lamina.linear_dropout "l" %x, %w dropout <p = 0.5> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @unknown_activation(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+2 {{expected ::mlir::lamina::ActivationKind to be one of: gelu_tanh, gelu_erf, relu}}
  // expected-error @+1 {{failed to parse Lamina_ActivationKindAttr parameter 'value'}}
  %0 = lamina.activation gelu_new %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @activation_on_lns(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>, %b: tensor<16x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = lamina.linear_act "l" %x, %w bias %b activation relu : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>, tensor<16x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  return %0 : tensor<4x16x!lns.num<f = 10>>
}

// -----

func.func @fused_lns_activation(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>> {
  // expected-error @+1 {{activation and dropout epilogues need float data, not LNS numbers}}
  %0 = lamina.fused_linear "l" %x, %w activation relu : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  return %0 : tensor<4x16x!lns.num<f = 10>>
}

// -----

func.func @dropout_p_above_one(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dropout probability must be in [0, 1], got 1.5}}
  %0 = lamina.dropout %x <p = 1.5> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_p_negative(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dropout probability must be in [0, 1], got -0.1}}
  %0 = lamina.dropout %x <p = -0.1, training> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_unknown_parameter(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{unknown dropout parameter 'inplace', expected training, offset, fork_rng, shard_axis or shards}}
  %0 = lamina.dropout %x <p = 0.1, inplace> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @active_dropout_without_seed(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{an active dropout (training, p > 0) needs a seed operand}}
  %0 = lamina.dropout %x <p = 0.1, training> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// An eval-mode dropout draws no mask: no offset to add a base to.
func.func @offset_base_without_seed(%x: tensor<4x16xf32>, %base: i64) -> tensor<4x16xf32> {
  // expected-error @+1 {{an offset_base needs a seed operand: only an active dropout draws a mask}}
  %0 = lamina.dropout %x <p = 0.1> offset_base %base : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

func.func @layer_offset_base_without_seed(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %base: i64) -> tensor<4x16xf32> {
  // expected-error @+1 {{an offset_base needs a seed operand: only an active dropout draws a mask}}
  %0 = lamina.linear_dropout "l" %x, %w bias %b dropout <p = 0.5> offset_base %base : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, i64) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// lamina.block names the block list of a function.
// expected-error @+1 {{'lamina.block' is the path of a block list on a function}}
func.func @block_not_a_path(%x: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {lamina.block = 3} {
  return %x : tensor<4x16xf32>
}

// -----

func.func @layer_dropout_without_seed(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{an active dropout (training, p > 0) needs a seed operand}}
  %0 = lamina.linear_dropout "l" %x, %w bias %b dropout <p = 0.5, training> : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_fwd_pre_all_reduce(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{sync mode fwd_pre does not exist with all_reduce (fwd_pre takes all_gather, bwd_post takes all_reduce, fwd_post takes any collective)}}
  %0 = lamina.sync %x <fwd_pre, all_reduce> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_bwd_post_all_gather(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{sync mode bwd_post does not exist with all_gather}}
  %0 = lamina.sync %x <bwd_post, all_gather, axis = 1> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_fwd_pre_scatter(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{sync mode fwd_pre does not exist with scatter}}
  %0 = lamina.sync %x <fwd_pre, scatter, axis = 0> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_missing_axis(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{reduce_scatter needs an axis}}
  %0 = lamina.sync %x <fwd_post, reduce_scatter> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_all_reduce_axis(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{all_reduce takes no axis}}
  %0 = lamina.sync %x <fwd_post, all_reduce, axis = 1> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_negative_axis(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{sync axis must be non-negative, got -1}}
  %0 = lamina.sync %x <fwd_post, all_gather, axis = -1> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_axis_out_of_range(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{sync axis 2 is out of range for a value of rank 2}}
  %0 = lamina.sync %x <fwd_post, all_gather, axis = 2> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_unknown_mode(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{unknown sync mode 'bwd_pre', expected fwd_pre, fwd_post or bwd_post}}
  %0 = lamina.sync %x <bwd_pre, all_reduce> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_unknown_op(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{unknown sync op 'broadcast', expected all_reduce, all_gather, reduce_scatter or scatter}}
  %0 = lamina.sync %x <fwd_post, broadcast> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @sync_unknown_parameter(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{unknown sync parameter 'dim', expected axis or tensor_parallel_output_grad}}
  %0 = lamina.sync %x <fwd_post, all_gather, dim = 1> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @layer_sync_not_fwd_post(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{a layer's sync acts on its matmul result and must be fwd_post, got bwd_post; express it as a lamina.sync on the value instead}}
  %0 = lamina.linear_sync "l" %x, %w sync <bwd_post, all_reduce> bias %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @layer_sync_axis(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{sync axis 3 is out of range for a result of rank 2}}
  %0 = lamina.fused_linear "l" %x, %w sync <fwd_post, reduce_scatter, axis = 3> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @qkv_hidden_not_divisible(%x: tensor<2x30xf32>, %w: tensor<90x30xf32>, %b: tensor<90xf32>) -> (tensor<2x4x7xf32>) {
  // expected-error @+1 {{hidden size 30 is not divisible by num_heads 4}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x30xf32>, tensor<90x30xf32>, tensor<90xf32>) -> (tensor<2x4x7xf32>, tensor<2x4x7xf32>, tensor<2x4x7xf32>)
  return %q : tensor<2x4x7xf32>
}

// -----

func.func @qkv_heads_not_divisible(%x: tensor<2x36xf32>, %w: tensor<108x36xf32>, %b: tensor<108xf32>) -> (tensor<2x6x6xf32>) {
  // expected-error @+1 {{num_heads 6 is not divisible by world_size 4}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 6 world_size 4 : (tensor<2x36xf32>, tensor<108x36xf32>, tensor<108xf32>) -> (tensor<2x6x6xf32>, tensor<2x6x6xf32>, tensor<2x6x6xf32>)
  return %q : tensor<2x6x6xf32>
}

// -----

func.func @qkv_zero_heads(%x: tensor<2x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x4x8xf32>) {
  // expected-error @+1 {{attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 0 world_size 1 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return %q : tensor<2x4x8xf32>
}

// -----

func.func @qkv_head_count(%x: tensor<2x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x3x8xf32>) {
  // expected-error @+1 {{q/k/v hold 3 heads; expected num_heads (4) or num_heads / world_size (2)}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 2 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>)
  return %q : tensor<2x3x8xf32>
}

// -----

func.func @qkv_head_dim(%x: tensor<2x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x4x4xf32>) {
  // expected-error @+1 {{head_dim of q/k/v is 4, expected hidden / num_heads = 8}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
  return %q : tensor<2x4x4xf32>
}

// -----

func.func @qkv_weight_rows(%x: tensor<2x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> (tensor<2x4x8xf32>) {
  // expected-error @+1 {{weight must be [3·heads·head_dim, hidden] = [96, 32], got 'tensor<64x32xf32>'}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return %q : tensor<2x4x8xf32>
}

// -----

func.func @qkv_types_differ(%x: tensor<2x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x4x8xf32>) {
  // expected-error @+1 {{q, k and v must have the same type}}
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 1 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>)
  return %q : tensor<2x4x8xf32>
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @qkv_unsharded_weight(%x: tensor<2x32xf32>, %w: tensor<96x32xf32> {lamina.layout = #lamina.layout<R>}, %b: tensor<96xf32>) -> (tensor<2x4x8xf32>) {
    // expected-error @+1 {{world_size 2 needs the weight sharded on axis 0, but it is #lamina.layout<R>}}
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 2 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    return %q : tensor<2x4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 4 : i64} {
  func.func @qkv_world_size_mismatch(%x: tensor<2x32xf32>, %w: tensor<96x32xf32> {lamina.layout = #lamina.layout<S(0)>}, %b: tensor<96xf32>) -> (tensor<2x4x8xf32>) {
    // expected-error @+1 {{world_size 2 differs from the program's world size 4}}
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 4 world_size 2 : (tensor<2x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    return %q : tensor<2x4x8xf32>
  }
}

// -----

func.func @layer_norm_weight_width(%x: tensor<4x16xf32>, %w: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{weight must have shape [16] (one value per normalized feature), got 'tensor<8xf32>'}}
  %0 = lamina.layer_norm "ln" %x weight %w eps 1.0e-05 : (tensor<4x16xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @layer_norm_bias_rank(%x: tensor<4x16xf32>, %b: tensor<1x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias must have shape [16] (one value per normalized feature), got 'tensor<1x16xf32>'}}
  %0 = lamina.layer_norm "ln" %x bias %b eps 1.0e-05 : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The bias is checked as well when the weight is right.
func.func @layer_norm_bias_width(%x: tensor<2x3x16xf32>, %w: tensor<16xf32>, %b: tensor<3xf32>) -> tensor<2x3x16xf32> {
  // expected-error @+1 {{bias must have shape [16] (one value per normalized feature), got 'tensor<3xf32>'}}
  %0 = lamina.layer_norm "ln" %x weight %w bias %b eps 1.0e-05 : (tensor<2x3x16xf32>, tensor<16xf32>, tensor<3xf32>) -> tensor<2x3x16xf32>
  return %0 : tensor<2x3x16xf32>
}

// -----

func.func @layer_norm_result_type(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result type 'tensor<4x8xf32>' differs from the input type 'tensor<4x16xf32>'}}
  %0 = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_negative_eps(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{eps must be non-negative, got -1.000000e-05}}
  %0 = lamina.layer_norm "ln" %x eps -1.0e-05 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @layer_norm_rank_0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{input must have rank >= 1, got 'tensor<f32>'}}
  %0 = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @layer_norm_f16(%x: tensor<4x16xf16>) -> tensor<4x16xf16> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %0 = lamina.layer_norm "ln" %x eps 1.0e-05 : (tensor<4x16xf16>) -> tensor<4x16xf16>
  return %0 : tensor<4x16xf16>
}

// -----

func.func @softmax_dim_out_of_range(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dim 2 is out of range for a value of rank 2}}
  %0 = lamina.softmax %x dim 2 : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @softmax_negative_dim(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = lamina.softmax %x dim -1 : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @softmax_result_type(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "lamina.softmax"(%x) <{dim = 1 : i64}> : (tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @bias_add_shape(%x: tensor<4x16xf32>, %b: tensor<4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias must have shape [16] (one value per output feature), got 'tensor<4xf32>'}}
  %0 = lamina.bias_add %x, %b : tensor<4x16xf32>, tensor<4xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// expected-error @+1 {{sharded layout needs an axis: S(axis)}}
func.func private @layout_s_without_axis(tensor<4x16xf32> {lamina.layout = #lamina.layout<S>})

// -----

// expected-error @+1 {{only the sharded layout S takes an axis}}
func.func private @layout_r_with_axis(tensor<4x16xf32> {lamina.layout = #lamina.layout<R(0)>})

// -----

// expected-error @+1 {{unknown layout 'Q', expected R, S(axis) or P}}
func.func private @layout_unknown(tensor<4x16xf32> {lamina.layout = #lamina.layout<Q>})

// -----

// expected-error @+1 {{argument 0 is sharded on axis 2 but has rank 2}}
func.func private @layout_axis_out_of_range(tensor<4x16xf32> {lamina.layout = #lamina.layout<S(2)>})

// -----

module attributes {lamina.world_size = 3 : i64} {
  // expected-error @+1 {{argument 0 is sharded on axis 1 of size 16, which is not divisible by the world size 3}}
  func.func private @layout_not_divisible(tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>})
}

// -----

// expected-error @+1 {{'lamina.layout' must be a #lamina.layout}}
func.func private @layout_wrong_attr(tensor<4x16xf32> {lamina.layout = 1 : i64})

// -----

// expected-error @+1 {{unknown lamina argument attribute 'lamina.shard'}}
func.func private @unknown_arg_attr(tensor<4x16xf32> {lamina.shard = 0 : i64})

// -----

// expected-error @+1 {{'lamina.world_size' must be a positive integer}}
module attributes {lamina.world_size = 0 : i64} {
}

// -----

// expected-error @+1 {{'lamina.world_size' belongs on a builtin.module}}
func.func private @world_size_on_func() attributes {lamina.world_size = 2 : i64}

// -----

// expected-error @+1 {{unknown lamina attribute 'lamina.trainable'}}
module attributes {lamina.trainable} {
}

// -----

// expected-error @+1 {{'lamina.training' is a module attribute mapping function names to #lamina.training_pair}}
module attributes {lamina.training} {
}

// -----

func.func @dropout_shard_axis_without_shards(%x: tensor<4x16xf32>, %s: i64, %r: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{dropout shard_axis and shards > 1 go together}}
  %0 = lamina.dropout %x <p = 0.1, training, shard_axis = 1> seed %s rank %r : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_shards_zero(%x: tensor<4x16xf32>, %s: i64) -> tensor<4x16xf32> {
  // expected-error @+1 {{dropout shards must be positive, got 0}}
  %0 = lamina.dropout %x <p = 0.1, training, shards = 0> seed %s : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_fork_rng_sharded(%x: tensor<4x16xf32>, %s: i64, %r: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{a fork_rng dropout draws by local index; it takes no shard_axis}}
  %0 = lamina.dropout %x <p = 0.1, training, fork_rng, shard_axis = 1, shards = 2> seed %s rank %r : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_sharded_without_rank(%x: tensor<4x16xf32>, %s: i64) -> tensor<4x16xf32> {
  // expected-error @+1 {{a dropout sharded on axis 1 needs a rank operand to locate its block}}
  %0 = lamina.dropout %x <p = 0.1, training, shard_axis = 1, shards = 2> seed %s : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @dropout_shard_axis_range(%x: tensor<4x16xf32>, %s: i64, %r: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{dropout shard_axis 2 is out of range for rank 2}}
  %0 = lamina.dropout %x <p = 0.1, training, shard_axis = 2, shards = 2> seed %s rank %r : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// expected-error @+1 {{'lamina.partitioned' is a unit attribute of a module with 'lamina.world_size' or 'lamina.grid'}}
module attributes {lamina.partitioned} {
}

// -----

// expected-error @+1 {{result 0 layout must be R or S(axis); a program never returns partial sums}}
func.func @partial_result(%x: tensor<4x16xf32>) -> (tensor<4x16xf32> {lamina.layout = #lamina.layout<P>}) {
  return %x : tensor<4x16xf32>
}

// -----

// The derivative ops: input, cotangent and result have one type.

func.func @activation_grad_cotangent_shape(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'lamina.activation_grad' op failed to verify that all of {input, cotangent, result} have same type}}
  %0 = "lamina.activation_grad"(%x, %dy) <{kind = #lamina<activation relu>}> : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @activation_grad_result_element(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'lamina.activation_grad' op failed to verify that all of {input, cotangent, result} have same type}}
  %0 = "lamina.activation_grad"(%x, %dy) <{kind = #lamina<activation gelu_tanh>}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

func.func @softmax_grad_cotangent_element(%y: tensor<4x8xf32>, %dy: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'lamina.softmax_grad' op failed to verify that all of {output, cotangent, result} have same type}}
  %0 = "lamina.softmax_grad"(%y, %dy) <{dim = 1 : i64}> : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_grad_result_shape(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'lamina.softmax_grad' op failed to verify that all of {output, cotangent, result} have same type}}
  %0 = "lamina.softmax_grad"(%y, %dy) <{dim = 1 : i64}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @softmax_grad_negative_dim(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'lamina.softmax_grad' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = "lamina.softmax_grad"(%y, %dy) <{dim = -1 : i64}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_grad_f16(%x: tensor<4x8xf16>, %dy: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'lamina.layer_norm_grad' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<4x8xf16>'}}
  %dx, %dw, %db = "lamina.layer_norm_grad"(%x, %dy) <{epsilon = 1.0e-05 : f64}> : (tensor<4x8xf16>, tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>)
  return %dx : tensor<4x8xf16>
}

// -----

func.func @softmax_grad_dim(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'lamina.softmax_grad' op dim 5 is out of range for a value of rank 2}}
  %0 = lamina.softmax_grad %y, %dy dim 5 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_grad_shapes(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'lamina.layer_norm_grad' op cotangent and input gradient must have the input's type 'tensor<4x8xf32>'}}
  %a, %b, %c = lamina.layer_norm_grad %x, %dy weight %w eps 1.0e-05 : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_parameters(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %w: tensor<3xf32>) {
  // expected-error @+1 {{'lamina.layer_norm_grad' op weight and parameter gradients must be 'tensor<8xf32>', got 'tensor<3xf32>'}}
  %a, %b, %c = lamina.layer_norm_grad %x, %dy weight %w eps 1.0e-05 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<3xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_dynamic(%x: tensor<4x?xf32>, %dy: tensor<4x?xf32>) {
  // expected-error @+1 {{'lamina.layer_norm_grad' op needs a static normalized (last) dim, got 'tensor<4x?xf32>'}}
  %a, %b, %c = lamina.layer_norm_grad %x, %dy eps 1.0e-05 : (tensor<4x?xf32>, tensor<4x?xf32>) -> (tensor<4x?xf32>, tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

// A pipeline stage ends after an op of a function.
// expected-error @+1 {{'lamina.pipeline_cut' is a unit attribute of an op in a function}}
module attributes {lamina.pipeline_cut} {
}

// -----

// expected-error @+1 {{'lamina.pipeline_reversed' is a unit attribute of a function}}
module attributes {lamina.pipeline_reversed} {
}

// -----

func.func @from_sync_not_a_sync(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'lamina.from_sync' must be a #lamina.sync}}
  %0 = arith.negf %x {lamina.from_sync = 1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @sync_output_grad_of_all_reduce(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{tensor_parallel_output_grad chooses the backward of an all_gather; all_reduce's backward has no choice}}
  %0 = lamina.sync %x <fwd_post, all_reduce, tensor_parallel_output_grad = false> : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @prefetch_rows_not_on_a_loop(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'lamina.prefetch_rows' is a positive distance in bytes on a loop}}
  %0 = arith.negf %x {lamina.prefetch_rows = 4096 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @prefetch_rows_not_positive(%m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'lamina.prefetch_rows' is a positive distance in bytes on a loop}}
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %zero, %m[%i] : memref<8xf32>
  } {lamina.prefetch_rows = 0 : i64}
  return
}

// -----

func.func @module_not_a_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lamina.module' must be a module path string}}
  %0 = arith.addf %x, %x {lamina.module = 3 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'lamina.checkpoint_modules' is an array of module paths on a function}}
func.func private @checkpoint_modules_not_strings() attributes {lamina.checkpoint_modules = [1]}

// -----

// expected-error @+1 {{'lamina.checkpoint_modules' is an array of module paths on a function}}
module attributes {lamina.checkpoint_modules = ["h.0"]} {
}

// -----

func.func @as_written_elsewhere(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lamina.as_written' is a unit attribute of lamina.sync}}
  %0 = arith.addf %x, %x {lamina.as_written} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_replicas_of_integers(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'lamina.reduce_replicas' op operand #0 must be ranked tensor of 32-bit float or 64-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi64>'}}
  %0 = lamina.reduce_replicas %x : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @reduce_replicas_to_a_negative_replica(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lamina.reduce_replicas' op attribute 'root' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = lamina.reduce_replicas %x to -1 : tensor<4xf32>
  return %0 : tensor<4xf32>
}


// -----

// expected-error @+1 {{a training pair's gradients are distinct argument numbers in increasing order}}
module attributes {lamina.training = {main = #lamina.training_pair<forward = @f, backward = @b, saved = 0, gradients = [1, 0]>}} {
}

// -----

// expected-error @+1 {{a forward saves a non-negative number of values, got -1}}
module attributes {lamina.training = {main = #lamina.training_pair<forward = @f, backward = @b, saved = -1, gradients = []>}} {
}

// -----

// expected-error @+1 {{'lamina.weight_packing' must be a module attribute mapping function names to #lamina.packed_weights}}
module attributes {lamina.weight_packing = {main = [tensor<2x8x16xf32>]}} {
}

// -----

// expected-error @+1 {{packed weights name one source argument each, got 1 weights and 2 sources}}
module attributes {lamina.weight_packing = {main = #lamina.packed_weights<[tensor<2x8x16xf32>] from [1, 2]>}} {
}

// -----

// expected-error @+1 {{packed weights are ranked tensors}}
module attributes {lamina.weight_packing = {main = #lamina.packed_weights<[f32] from [1]>}} {
}

// -----

func.func @rope_one_table(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<16x1x16xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{a rope epilogue takes both tables, cos and sin}}
  %0 = "lamina.fused_linear"(%x, %w, %cos) <{path = "wq", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 1, 0>}> : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<16x1x16xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @rope_with_bias(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %b: tensor<128xf32>, %cos: tensor<16x1x16xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{a rope epilogue takes no sync, bias, activation or dropout}}
  %0 = lamina.fused_linear "wq" %x, %w bias %b rope %cos, %cos : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<128xf32>, tensor<16x1x16xf32>, tensor<16x1x16xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @rope_rank(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<16x16xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{rope tables have the rank of the result viewed as [..., heads, head_dim], 3, not 2}}
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %cos : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @rope_heads(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<16x1x24xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{rope tables of 24 angles give heads of 48 features, which do not divide the result's 128}}
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %cos : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<16x1x24xf32>, tensor<16x1x24xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @rope_table_dim(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<8x1x16xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{rope table dim 0 is 8; it must be 16 (the result viewed as [..., heads, head_dim / 2]) or 1}}
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %cos : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<8x1x16xf32>, tensor<8x1x16xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @rope_table_types(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<16x1x16xf32>, %sin: tensor<1x1x16xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{rope tables cos and sin must have the same type}}
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %sin : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<16x1x16xf32>, tensor<1x1x16xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @rope_dynamic_tables(%x: tensor<16x128xf32>, %w: tensor<128x128xf32>, %cos: tensor<?x1x16xf32>) -> tensor<16x128xf32> {
  // expected-error @+1 {{a rope epilogue needs static shapes}}
  %0 = lamina.fused_linear "wq" %x, %w rope %cos, %cos : (tensor<16x128xf32>, tensor<128x128xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// -----

func.func @unknown_stage(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'lamina.stage' must be a #lamina<stage ...>}}
  %0 = arith.addf %x, %x {lamina.stage = "prologue"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
