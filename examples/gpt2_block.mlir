// A GPT-2-style transformer block (pre-residual, without layer norms) in the
// lamina dialect: fused QKV projection, causal softmax attention (upstream
// linalg), attention output projection, MLP fc_in with GELU (tanh) and
// fc_out with dropout, each followed by a residual add.
//
// batch 2, sequence 16, hidden 64, 4 heads of 16, MLP width 256; training
// mode (dropout p = 0.1 drawn from %seed).

#x_bihd = affine_map<(b, h, i, j, d) -> (b, i, h, d)>
#k_bjhd = affine_map<(b, h, i, j, d) -> (b, j, h, d)>
#s_bhij = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p_bhij = affine_map<(b, i, h, d, j) -> (b, h, i, j)>
#v_bjhd = affine_map<(b, i, h, d, j) -> (b, j, h, d)>
#o_bihd = affine_map<(b, i, h, d, j) -> (b, i, h, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>

module {
  func.func @gpt2_block(%x: tensor<2x16x64xf32>,
                        %w_qkv: tensor<192x64xf32>, %b_qkv: tensor<192xf32>,
                        %w_proj: tensor<64x64xf32>, %b_proj: tensor<64xf32>,
                        %w_fc_in: tensor<256x64xf32>, %b_fc_in: tensor<256xf32>,
                        %w_fc_out: tensor<64x256xf32>, %b_fc_out: tensor<64xf32>,
                        %seed: i64) -> tensor<2x16x64xf32> {
    %q, %k, %v = lamina.fused_qkv "h.0.attn.qkv" %x, %w_qkv bias %b_qkv
        num_heads 4 world_size 1
        : (tensor<2x16x64xf32>, tensor<192x64xf32>, tensor<192xf32>)
        -> (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>)

    // scores[b, h, i, j] = q[b, i, h, :] · k[b, j, h, :]
    %zero = arith.constant 0.0 : f32
    %empty_s = tensor.empty() : tensor<2x4x16x16xf32>
    %init_s = linalg.fill ins(%zero : f32) outs(%empty_s : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %scores = linalg.generic {
        indexing_maps = [#x_bihd, #k_bjhd, #s_bhij],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>)
        outs(%init_s : tensor<2x4x16x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x4x16x16xf32>

    // Scale by 1/sqrt(head_dim) and mask the future (j > i) with -inf.
    %scale = arith.constant 0.25 : f32
    %neg_inf = arith.constant 0xFF800000 : f32
    %masked = linalg.generic {
        indexing_maps = [#id4],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        outs(%scores : tensor<2x4x16x16xf32>) {
    ^bb0(%s: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %future = arith.cmpi ugt, %j, %i : index
      %scaled = arith.mulf %s, %scale : f32
      %r = arith.select %future, %neg_inf, %scaled : f32
      linalg.yield %r : f32
    } -> tensor<2x4x16x16xf32>
    %probs = linalg.softmax dimension(3)
        ins(%masked : tensor<2x4x16x16xf32>)
        outs(%empty_s : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>

    // context[b, i, h, d] = sum_j probs[b, h, i, j] · v[b, j, h, d]
    %empty_c = tensor.empty() : tensor<2x16x4x16xf32>
    %init_c = linalg.fill ins(%zero : f32) outs(%empty_c : tensor<2x16x4x16xf32>) -> tensor<2x16x4x16xf32>
    %context = linalg.generic {
        indexing_maps = [#p_bhij, #v_bjhd, #o_bihd],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%probs, %v : tensor<2x4x16x16xf32>, tensor<2x16x4x16xf32>)
        outs(%init_c : tensor<2x16x4x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x16x4x16xf32>
    %merged = tensor.collapse_shape %context [[0], [1], [2, 3]]
        : tensor<2x16x4x16xf32> into tensor<2x16x64xf32>

    %attn = lamina.linear "h.0.attn.c_proj" %merged, %w_proj bias %b_proj
        : (tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    %h1 = arith.addf %x, %attn : tensor<2x16x64xf32>

    %inner = lamina.linear_act "h.0.mlp.fc_in" %h1, %w_fc_in bias %b_fc_in activation gelu_tanh
        : (tensor<2x16x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
    %mlp = lamina.linear_dropout "h.0.mlp.fc_out" %inner, %w_fc_out bias %b_fc_out
        dropout <p = 0.1, training> seed %seed
        : (tensor<2x16x256xf32>, tensor<64x256xf32>, tensor<64xf32>, i64) -> tensor<2x16x64xf32>
    %out = arith.addf %h1, %mlp : tensor<2x16x64xf32>
    return %out : tensor<2x16x64xf32>
  }
}
