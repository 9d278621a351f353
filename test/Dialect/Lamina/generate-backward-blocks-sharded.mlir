// RUN: lamina-opt %s --lamina-outline-blocks --lamina-generate-backward | FileCheck %s
// RUN: lamina-opt %s --lamina-generate-backward | FileCheck %s --check-prefix=INLINE

// Three Megatron MLP blocks on two ranks (fc1 column-parallel after a
// bwd_post all-reduce of its input, fc2 row-parallel with a fwd_post
// all-reduce, a residual add). lamina-outline-blocks outlines the sharded
// program's blocks (their inputs have the same layouts);
// lamina-generate-backward checks and partitions the block once, for the
// layouts its calls pass, collectives inside, and differentiates it once.
// The block's forward computes the per-rank fc1 (8 of its 16
// rows) and all-reduces fc2's partial sums; its backward transposes them:
// fc2's fwd_post all-reduce is the identity on dy, fc1's bwd_post sync an
// all-reduce of dx's partial sums, added to the residual's dy.

// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W1A:[a-z0-9]+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[B1A:[a-z0-9]+]]: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2A:[a-z0-9]+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}
// CHECK: %[[H0:.+]]:3 = call @h_block_forward(%[[X]], %[[W1A]], %[[B1A]], %[[W2A]]) {lamina.module = "h.0"}
// CHECK: %[[H1:.+]]:3 = call @h_block_forward(%[[H0]]#0, %{{.+}}, %{{.+}}, %{{.+}}) {lamina.module = "h.1"}
// CHECK: %[[H2:.+]]:3 = call @h_block_forward(%[[H1]]#0, %{{.+}}, %{{.+}}, %{{.+}}) {lamina.module = "h.2"}
// CHECK-LABEL: func.func @main_backward(
// CHECK: call @h_block_backward({{.+}}) {lamina.module = "h.2"}
// CHECK: call @h_block_backward({{.+}}) {lamina.module = "h.1"}
// CHECK: call @h_block_backward({{.+}}) {lamina.module = "h.0"}
// CHECK-LABEL: func.func private @h_block_forward(
// CHECK-SAME: %[[BX:[a-z0-9]+]]: tensor<4x8xf32>, %[[BW1:[a-z0-9]+]]: tensor<8x8xf32>, %[[BB1:[a-z0-9]+]]: tensor<8xf32>, %[[BW2:[a-z0-9]+]]: tensor<8x8xf32>)
// CHECK-NOT: lamina.sync
// CHECK: %[[M1:.+]] = lamina.matmul "h.0.fc1" %[[BX]], %[[BW1]] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[P:.+]] = lamina.matmul "h.0.fc2" %{{.+}}, %[[BW2]]
// CHECK: %[[R:.+]] = shard.all_reduce %[[P]] on @lamina_grid
// CHECK: %[[Y:.+]] = arith.addf %[[BX]], %[[R]]
// CHECK-LABEL: func.func private @h_block_backward(
// CHECK-SAME: %[[BX:[a-z0-9]+]]: tensor<4x8xf32>, %[[BW1:[a-z0-9]+]]: tensor<8x8xf32>, %[[BB1:[a-z0-9]+]]: tensor<8xf32>, %[[BW2:[a-z0-9]+]]: tensor<8x8xf32>, %{{[a-z0-9]+}}: tensor<4x8xf32>, %{{[a-z0-9]+}}: tensor<4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK: %[[DH:.+]] = lamina.matmul "h.0.fc2" %[[DY]]
// CHECK: %[[DXP:.+]] = lamina.matmul "h.0.fc1"
// CHECK: %[[DXR:.+]] = shard.all_reduce %[[DXP]] on @lamina_grid
// CHECK: %[[DX:.+]] = arith.addf %[[DY]], %[[DXR]]
// CHECK: return %[[DX]],

// Not outlined, the partitioned program stays one function.
// INLINE-NOT: call @
// INLINE-NOT: _block
module attributes {lamina.world_size = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>,
      %w1a: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1a: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2a: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w1b: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1b: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2b: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w1c: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1c: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2c: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %s0 = lamina.sync "h.0.fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %a0 = lamina.linear_act "h.0.fc1" %s0, %w1a bias %b1a activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %l0 = lamina.linear_sync "h.0.fc2" %a0, %w2a sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %h0 = arith.addf %x, %l0 {lamina.module = "h.0"} : tensor<4x8xf32>
    %s1 = lamina.sync "h.1.fc1" %h0 <bwd_post, all_reduce> : tensor<4x8xf32>
    %a1 = lamina.linear_act "h.1.fc1" %s1, %w1b bias %b1b activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %l1 = lamina.linear_sync "h.1.fc2" %a1, %w2b sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %h1 = arith.addf %h0, %l1 {lamina.module = "h.1"} : tensor<4x8xf32>
    %s2 = lamina.sync "h.2.fc1" %h1 <bwd_post, all_reduce> : tensor<4x8xf32>
    %a2 = lamina.linear_act "h.2.fc1" %s2, %w1c bias %b1c activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %l2 = lamina.linear_sync "h.2.fc2" %a2, %w2c sync <fwd_post, all_reduce> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %h2 = arith.addf %h1, %l2 {lamina.module = "h.2"} : tensor<4x8xf32>
    return %h2 : tensor<4x8xf32>
  }
}
