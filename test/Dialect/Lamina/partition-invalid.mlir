// RUN: lamina-opt %s --lamina-partition --split-input-file -verify-diagnostics

// The Megatron MLP without fc2's all-reduce: its bias would be added to
// every rank's partial sums (Slapo's double-bias bug).
module attributes {lamina.world_size = 2 : i64} {
  func.func @missing_all_reduce(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.matmul "fc1" %x, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.bias_add "fc1" %0, %b1 : tensor<4x16xf32>, tensor<16xf32>
    %2 = lamina.matmul "fc2" %1, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{adds its bias to partial sums (layout P) of layer 'fc2'}}
    %3 = lamina.bias_add "fc2" %2, %b2 : tensor<4x8xf32>, tensor<8xf32>
    return %3 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @layer(%x: tensor<4x8xf32>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    // expected-error @+1 {{is a layer; partitioning needs decomposed layers (run lamina-decompose first)}}
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.sync "fc" %0 <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @qkv_heads(%x: tensor<2x12xf32>,
      %w: tensor<36x12xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b: tensor<36xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<2x3x4xf32> {
    // expected-error @+1 {{has 3 heads, which 2 ranks cannot share evenly}}
    %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads 3 world_size 1 : (tensor<2x12xf32>, tensor<36x12xf32>, tensor<36xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
    %0 = lamina.sync %q <fwd_post, all_gather, axis = 1> : tensor<2x3x4xf32>
    return %0 : tensor<2x3x4xf32>
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  func.func @sharded_reduction(%x: tensor<4x8xf32>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x16xf32> {
    %0 = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    // expected-error @+1 {{takes sharded operands (#lamina.layout<S(1)>); layouts propagate only through element-wise ops: all_gather the value first}}
    %1 = tensor.pad %0 low[0, 0] high[0, 0] {
    ^bb0(%i: index, %j: index):
      %c = arith.constant 0.0 : f32
      tensor.yield %c : f32
    } : tensor<4x16xf32> to tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
}

// -----

// LNS partial sums cannot be reduced by MPI: their sum is an LNS addition.
module attributes {lamina.world_size = 2 : i64} {
  func.func @lns_all_reduce(%x: tensor<4x16x!lns.num<f = 10>>,
      %w: tensor<8x16x!lns.num<f = 10>> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8x!lns.num<f = 10>> {
    %0 = lamina.sync "x" %x <fwd_post, scatter, axis = 1> : tensor<4x16x!lns.num<f = 10>>
    %1 = lamina.matmul "fc" %0, %w : (tensor<4x16x!lns.num<f = 10>>, tensor<8x16x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>>
    // expected-error @+1 {{reduces partial sums of '!lns.num<f = 10>' across ranks, but MPI can only add floats}}
    %2 = lamina.sync "fc" %1 <fwd_post, all_reduce> : tensor<4x8x!lns.num<f = 10>>
    return %2 : tensor<4x8x!lns.num<f = 10>>
  }
}

// -----

// Dropout keys its mask by each element's place in the whole tensor, which
// a value in groups does not have per rank.
module attributes {lamina.world_size = 2 : i64} {
  func.func @dropout_of_groups(%x: tensor<4x96xf32> {lamina.layout = #lamina.layout<S(1, groups = 3)>}, %seed: i64) -> tensor<4x32xf32> {
    // expected-error @+1 {{drops a value sharded in 3 groups, whose elements have no contiguous place per rank; slice the groups apart first}}
    %0 = lamina.dropout %x <p = 0.1, training> seed %seed : tensor<4x96xf32>
    %1 = tensor.extract_slice %0[0, 0] [4, 32] [1, 1] : tensor<4x96xf32> to tensor<4x32xf32>
    return %1 : tensor<4x32xf32>
  }
}

// -----

// A transpose into a tensor the program computed (not a fresh one) cannot
// be given a per-rank init.
module attributes {lamina.world_size = 2 : i64} {
  func.func @transpose_into_computed(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %init = arith.addf %y, %y : tensor<8x4xf32>
    // expected-error @+1 {{has a sharded result whose init is not a fresh tensor; the partitioner cannot give it a per-rank shape}}
    %0 = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%init : tensor<8x4xf32>) permutation = [1, 0]
    %1 = tensor.collapse_shape %0 [[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
    %2 = tensor.expand_shape %1 [[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
    return %2 : tensor<8x4xf32>
  }
}

// -----

// The partitioner cuts along `tp`; on the data axis a program is one
// replica's, at its own shapes, and nothing is sharded there.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{argument 0 is sharded over grid axis 'dp' (2 ranks), but lamina-partition cuts programs along grid axis 'tp' alone: on the other axes a program is one replica's or one stage's, at its own shapes}}
  func.func @dp_tp(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>},
                   %w: tensor<32x16xf32> {lamina.layout = #lamina.layout<S(0)>})
      -> tensor<8x32xf32> {
    %h = lamina.matmul "fc" %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
    return %h : tensor<8x32xf32>
  }
}
