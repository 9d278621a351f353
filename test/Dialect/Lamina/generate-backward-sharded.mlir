// RUN: lamina-opt %s --lamina-generate-backward -split-input-file | FileCheck %s

// Megatron's MLP on 2 ranks (fc1 column parallel with its bwd_post
// all-reduce, fc2 row parallel with its fwd_post all-reduce). By hand, per
// rank: dy is whole; fc2's fwd_post all_reduce transposes to the identity;
// db2 = Σ dy is whole; dH = dy·W2ᵣ and dW2ᵣ = dyᵀ·Hᵣ are this rank's
// columns; fc1's dXᵣ = dH'·W1ᵣ is a partial sum, all-reduced by the
// transposed bwd_post sync; dW1ᵣ, db1ᵣ are this rank's rows. Every function
// has per-rank types; the sharded parameters' gradients keep their layouts.

// CHECK-LABEL: module attributes {lamina.partitioned, lamina.training = {main = #lamina.training_pair<forward = @main_forward, backward = @main_backward, saved = 2, gradients = [0, 1, 2, 3, 4]>}
// CHECK: shard.grid @lamina_grid(shape = 2)

// The bwd_post sync is gone from the forward (the identity there).
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %{{.*}}: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %{{.*}}: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, %{{.*}}: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %{{.*}}: tensor<8xf32>)
// CHECK-NOT: lamina.sync
// CHECK: %[[H1:.*]] = lamina.matmul "fc1" %[[X]]
// CHECK: shard.all_reduce
// CHECK-NOT: lamina.from_sync
// CHECK: return

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[BX:[^:]*]]: tensor<4x8xf32>, %[[W1:[^:]*]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %{{[^:]*}}: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2:[^:]*]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %{{[^:]*}}: tensor<8xf32>,
// CHECK-SAME: %[[GELU:[^:]*]]: tensor<4x8xf32>, %[[PRE:[^:]*]]: tensor<4x8xf32>, %[[DY:[^:]*]]: tensor<4x8xf32>)
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, tensor<8xf32>)
// No collective for fc2: its fwd_post all_reduce transposes to the identity.
// CHECK: %[[DB2:.*]] = linalg.reduce ins(%[[DY]]
// CHECK: %[[W2T:.*]] = linalg.transpose ins(%[[W2]]
// CHECK: %[[DH:.*]] = lamina.matmul "fc2" %[[DY]], %[[W2T]]
// CHECK: %[[DW2:.*]] = lamina.matmul "fc2"
// CHECK: %[[DPRE:.*]] = lamina.activation_grad "fc1" gelu_tanh %[[PRE]], %[[DH]]
// CHECK: %[[DB1:.*]] = linalg.reduce ins(%[[DPRE]]
// CHECK: %[[W1T:.*]] = linalg.transpose ins(%[[W1]]
// CHECK: %[[DXP:.*]] = lamina.matmul "fc1" %[[DPRE]], %[[W1T]]
// CHECK: %[[DW1:.*]] = lamina.matmul "fc1"
// CHECK: %[[DX:.*]] = shard.all_reduce %[[DXP]] on @lamina_grid grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NOT: shard.
// CHECK: return %[[DX]], %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %0 = lamina.linear_act "fc1" %s, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %2 = lamina.bias_add "fc2" %1, %b2 : tensor<4x8xf32>, tensor<8xf32>
    return %2 : tensor<4x8xf32>
  }
}

// -----

// Sequence parallelism: the rows of x and of the result are split; fc1
// all-gathers its input first, fc2 reduce-scatters its partial sums. By
// hand: reduce_scatter transposes to all_gather, fc1's fwd_pre all_gather
// to reduce_scatter; db2 = Σ over this rank's rows is partial, all-reduced
// as a parameter gradient; x's gradient, this rank's rows, is gathered
// whole for the caller.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %{{[^:]*}}: tensor<4x4xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W1:[^:]*]]: tensor<8x4xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2:[^:]*]]: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %{{[^:]*}}: tensor<4xf32>,
// CHECK-SAME: %[[DY:[^:]*]]: tensor<4x4xf32>)
// CHECK-SAME: -> (tensor<8x4xf32>, tensor<8x4xf32> {lamina.layout = #lamina.layout<S(0)>}, tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>}, tensor<4xf32>)
// CHECK: %[[DB2P:.*]] = linalg.reduce ins(%[[DY]] : tensor<4x4xf32>)
// CHECK: %[[DYW:.*]] = shard.all_gather %[[DY]] on @lamina_grid grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[DH:.*]] = lamina.matmul "fc2" %[[DYW]]
// CHECK: %[[DW2:.*]] = lamina.matmul "fc2"
// CHECK: %[[DXP:.*]] = lamina.matmul "fc1" %[[DH]]
// CHECK: %[[DW1:.*]] = lamina.matmul "fc1"
// CHECK: %[[DXR:.*]] = shard.reduce_scatter %[[DXP]] on @lamina_grid grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[DX:.*]] = shard.all_gather %[[DXR]] on @lamina_grid grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[DB2:.*]] = shard.all_reduce %[[DB2P]] on @lamina_grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// CHECK: return %[[DX]], %[[DW1]], %[[DW2]], %[[DB2]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<8x4xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w1: tensor<16x4xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b2: tensor<4xf32>) -> tensor<8x4xf32> {
    %g = lamina.sync "fc1" %x <fwd_pre, all_gather, axis = 0> : tensor<8x4xf32>
    %0 = lamina.linear "fc1" %g, %w1 : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
    %1 = lamina.linear_sync "fc2" %0, %w2 sync <fwd_post, reduce_scatter, axis = 0> : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
    %2 = lamina.bias_add "fc2" %1, %b2 : tensor<8x4xf32>, tensor<4xf32>
    return %2 : tensor<8x4xf32>
  }
}

// -----

// A scatter of a replicated layer's output transposes to an all_gather; an
// all_gather under tensor_parallel_output_grad = false to a split of the
// whole gradient (shard.all_slice).

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<4x16xf32>)
// CHECK: %[[SPLIT:.*]] = shard.all_slice %[[DY]] on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK: %[[WHOLE:.*]] = shard.all_gather %[[SPLIT]] on @lamina_grid grid_axes = [0] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK: lamina.matmul "fc" %[[WHOLE]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    %y = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %s = lamina.sync "fc" %y <fwd_post, scatter, axis = 1> : tensor<4x16xf32>
    %g = lamina.sync "fc" %s <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false> : tensor<4x16xf32>
    return %g : tensor<4x16xf32>
  }
}

// -----

// Gathers that leave their transpose open (Slapo's resharding strings) get
// the one their gradient needs. Slapo's scheme 5: fc1 column parallel, its
// output gathered ("RS->RR"); fc2 column parallel on the whole value, its
// output gathered. fc2's gather gets the whole dy: this rank's block
// (all_slice). fc1's gather gets fc2's input gradient, a partial sum on each
// rank (dX₂ = dY₂ᵣ·W₂ᵣ): reduce-scattered into fc1's output gradient, S(1);
// fc1's input gradient is then partial, all-reduced by its bwd_post sync.

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<4x8xf32>)
// CHECK: %[[DY2:.*]] = shard.all_slice %[[DY]] on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: %[[DH:.*]] = lamina.matmul "fc2" %[[DY2]]
// CHECK: %[[DH1:.*]] = shard.reduce_scatter %[[DH]] on @lamina_grid grid_axes = [0] scatter_axis = 1 : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK: lamina.matmul "fc1" %[[DH1]]
// CHECK: shard.all_reduce
// CHECK: return
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %h = lamina.linear "fc1" %s, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %hg = lamina.sync "fc1" %h <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    %y = lamina.linear "fc2" %hg, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %yg = lamina.sync "fc2" %y <fwd_post, all_gather, axis = 1> : tensor<4x8xf32>
    return %yg : tensor<4x8xf32>
  }
}

// -----

// A loss on the gathered logits of a vocabulary-parallel head: the loss's
// gradient is whole on every rank (a 0-d loss of whole logits), so the
// gather, written without tensor_parallel_output_grad, keeps this rank's
// block of the logits' gradient instead of reduce-scattering it.

// CHECK-LABEL: func.func @main_backward(
// CHECK: %[[DLOGITS:.*]] = lamina.cross_entropy_grad
// CHECK: shard.all_slice %[[DLOGITS]] on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK-NOT: shard.reduce_scatter
// CHECK: return
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %t: tensor<4xi64>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<f32> {
    %s = lamina.sync "head" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %y = lamina.linear "head" %s, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %g = lamina.sync "head" %y <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    %l = lamina.cross_entropy %g, %t ignore_index -1 : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A head sharded by vocabulary and its loss (vocabulary parallel, no
// gather). By hand, per rank: the loss is whole; dYᵣ, the gradient of this
// rank's [4, 8] block of the logits, comes from the block and the
// all-reduced row statistics (inside lamina.cross_entropy_grad); dWᵣ = dYᵣᵀ·X
// is this rank's rows; dX = dYᵣ·Wᵣ is a partial sum, all-reduced by the
// head's bwd_post sync.
// CHECK-LABEL: func.func @main_forward(
// CHECK: %[[RANK:.*]] = shard.process_linear_index
// CHECK: lamina.cross_entropy %{{.*}}, %{{.*}} ignore_index -1 shards 2 rank %[[RANK]] : (tensor<4x8xf32>, tensor<4xi64>, index) -> tensor<f32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[T:[^:]*]]: tensor<4xi64>, %[[W:[^:]*]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>},
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>})
// CHECK: %[[BRANK:.*]] = shard.process_linear_index
// CHECK-NOT: shard.all_gather
// CHECK: %[[DY:.*]] = lamina.cross_entropy_grad %{{.*}}, %[[T]], %{{.*}} ignore_index -1 shards 2 rank %[[BRANK]] : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>, index) -> tensor<4x8xf32>
// CHECK: %[[DXP:.*]] = lamina.matmul "head" %[[DY]]
// CHECK: %[[DW:.*]] = lamina.matmul "head"
// CHECK: %[[DX:.*]] = shard.all_reduce %[[DXP]]
// CHECK-NOT: shard.
// CHECK: return %[[DX]], %[[DW]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %t: tensor<4xi64>,
      %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<f32> {
    %s = lamina.sync "head" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %y = lamina.linear "head" %s, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %l = lamina.cross_entropy %y, %t ignore_index -1 : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A replicated scale applied to values sharded by heads: the forward takes
// this rank's block of it (shard.all_slice); the backward gathers the
// blocks of its gradient back whole (the slice's transpose), so the whole
// scale's gradient is on every rank, as its layout (R) says. (The sharded
// input's gradient is gathered too: the host takes an input's gradient
// whole.)
// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<2x2x4xf32> {lamina.layout = #lamina.layout<S(1)>}, %[[C:[a-z0-9]+]]: tensor<2x4x4xf32>)
// CHECK: %[[BLOCK:.+]] = shard.all_slice %[[C]] on @lamina_grid grid_axes = [0] slice_axis = 1 : tensor<2x4x4xf32> -> tensor<2x2x4xf32>
// CHECK: arith.mulf %[[S]], %[[BLOCK]] : tensor<2x2x4xf32>
// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[BS:[a-z0-9]+]]: tensor<2x2x4xf32> {lamina.layout = #lamina.layout<S(1)>}, %{{[a-z0-9]+}}: tensor<2x4x4xf32>, %[[SAVED:[a-z0-9]+]]: tensor<2x2x4xf32>, %[[DY:[a-z0-9]+]]: tensor<2x2x4xf32>)
// CHECK: %[[DS:.+]] = arith.mulf %[[DY]], %[[SAVED]]
// CHECK: %[[DBLOCK:.+]] = arith.mulf %[[DY]], %[[BS]]
// CHECK: %[[DC:.+]] = shard.all_gather %[[DBLOCK]] on @lamina_grid grid_axes = [0] gather_axis = 1 : tensor<2x2x4xf32> -> tensor<2x4x4xf32>
// CHECK: %[[DSW:.+]] = shard.all_gather %[[DS]] on @lamina_grid grid_axes = [0] gather_axis = 1
// CHECK: return %[[DSW]], %[[DC]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%s: tensor<2x4x4xf32> {lamina.layout = #lamina.layout<S(1)>}, %c: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32> {lamina.layout = #lamina.layout<S(1)>}) {
    %r = arith.mulf %s, %c : tensor<2x4x4xf32>
    return %r : tensor<2x4x4xf32>
  }
}
