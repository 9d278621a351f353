// RUN: lamina-opt %s --lamina-partition --split-input-file | FileCheck %s
// RUN: lamina-opt %s --lamina-check-layouts=annotate=true --split-input-file | FileCheck %s --check-prefix=LAYOUTS
// RUN: lamina-opt %s --lamina-check-gradient-layouts --split-input-file | FileCheck %s --check-prefix=GRADIENTS

// Two instances of a Megatron MLP block (fc1 column parallel after a
// bwd_post all-reduce of its input, fc2 row parallel with a fwd_post
// all-reduce, a residual add) calling one function. The block is inferred
// and partitioned once, for the layouts its calls pass: its weights arrive
// as each rank's rows (fc1) and columns (fc2), its fc2 partial sums are
// all-reduced inside it, and the calls pass and return per-rank tensors.

// CHECK-LABEL: func.func @two_blocks
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W1A:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[B1A:.+]]: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2A:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %[[W1B:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[B1B:.+]]: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[W2B:.+]]: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32>
// CHECK: %[[H0:.+]] = call @h_block(%[[X]], %[[W1A]], %[[B1A]], %[[W2A]]) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H1:.+]] = call @h_block(%[[H0]], %[[W1B]], %[[B1B]], %[[W2B]]) {lamina.module = "h.1"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: return %[[H1]]
// CHECK-LABEL: func.func private @h_block
// CHECK-SAME: (%[[BX:.+]]: tensor<4x8xf32>, %[[W1:.+]]: tensor<8x8xf32>, %[[B1:.+]]: tensor<8xf32>, %[[W2:.+]]: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: lamina.sync
// CHECK: %[[H:.+]] = lamina.matmul "h.0.fc1" %[[BX]], %[[W1]] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[HB:.+]] = lamina.bias_add "h.0.fc1" %[[H]], %[[B1]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: %[[G:.+]] = lamina.activation "h.0.fc1" gelu_tanh %[[HB]] : tensor<4x8xf32>
// CHECK: %[[P:.+]] = lamina.matmul "h.0.fc2" %[[G]], %[[W2]] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.+]] = shard.all_reduce %[[P]] on @lamina_grid grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[Y:.+]] = arith.addf %[[BX]], %[[R]] : tensor<4x8xf32>
// CHECK: return %[[Y]] : tensor<4x8xf32>

// The layouts, annotated: the calls return R, fc1's pieces inside the block
// S(1), fc2's matmul P, its sync R.
// LAYOUTS-LABEL: func.func @two_blocks
// LAYOUTS: call @h_block({{.+}}) {lamina.module = "h.0", lamina.result_layouts = [#lamina.layout<R>]}
// LAYOUTS: call @h_block({{.+}}) {lamina.module = "h.1", lamina.result_layouts = [#lamina.layout<R>]}
// LAYOUTS-LABEL: func.func private @h_block
// LAYOUTS: lamina.sync "h.0.fc1" {{.+}} {lamina.backward = "all_reduce", lamina.result_layouts = [#lamina.layout<R>]}
// LAYOUTS: lamina.matmul "h.0.fc1" {{.+}} {lamina.result_layouts = [#lamina.layout<S(1)>]}
// LAYOUTS: lamina.activation "h.0.fc1" {{.+}} {lamina.result_layouts = [#lamina.layout<S(1)>]}
// LAYOUTS: lamina.matmul "h.0.fc2" {{.+}} {lamina.result_layouts = [#lamina.layout<P>]}
// LAYOUTS: lamina.sync "h.0.fc2" {{.+}} {lamina.backward = "identity", lamina.result_layouts = [#lamina.layout<R>]}

// The backward of both calls is whole where it must be: the bwd_post
// all-reduce in the block sums fc1's partial input gradients.
// GRADIENTS-LABEL: func.func @two_blocks
module attributes {lamina.world_size = 2 : i64} {
  func.func @two_blocks(%x: tensor<4x8xf32>,
      %w1a: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1a: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2a: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w1b: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %b1b: tensor<16xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2b: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %h0 = func.call @h_block(%x, %w1a, %b1a, %w2a) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %h1 = func.call @h_block(%h0, %w1b, %b1b, %w2b) {lamina.module = "h.1"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %h1 : tensor<4x8xf32>
  }
  func.func private @h_block(%x: tensor<4x8xf32>, %w1: tensor<16x8xf32>,
      %b1: tensor<16xf32>, %w2: tensor<8x16xf32>) -> tensor<4x8xf32>
      attributes {lamina.block = "h"} {
    %s = lamina.sync "h.0.fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %0 = lamina.matmul "h.0.fc1" %s, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.bias_add "h.0.fc1" %0, %b1 : tensor<4x16xf32>, tensor<16xf32>
    %2 = lamina.activation "h.0.fc1" gelu_tanh %1 : tensor<4x16xf32>
    %3 = lamina.matmul "h.0.fc2" %2, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %4 = lamina.sync "h.0.fc2" %3 <fwd_post, all_reduce> : tensor<4x8xf32>
    %5 = arith.addf %x, %4 : tensor<4x8xf32>
    return %5 : tensor<4x8xf32>
  }
}

// -----

// A called function returning a sharded value: fc1's column-parallel half
// in the function, fc2 after the call. The call returns each rank's
// columns, the function's result is declared S(1), and fc2 takes the
// per-rank value.

// CHECK-LABEL: func.func @sharded_result
// CHECK: %[[A:.+]] = call @fc1_block(%{{.+}}, %{{.+}}) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[Y:.+]] = lamina.matmul "fc2" %[[A]], %{{.+}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: shard.all_reduce %[[Y]]
// CHECK-LABEL: func.func private @fc1_block
// CHECK-SAME: (%{{.+}}: tensor<4x8xf32>, %{{.+}}: tensor<8x8xf32>) -> (tensor<4x8xf32> {lamina.layout = #lamina.layout<S(1)>})
// CHECK: lamina.matmul "h.0.fc1" {{.+}} -> tensor<4x8xf32>

// LAYOUTS-LABEL: func.func @sharded_result
// LAYOUTS: call @fc1_block({{.+}}) {lamina.module = "h.0", lamina.result_layouts = [#lamina.layout<S(1)>]}
// LAYOUTS: lamina.matmul "fc2" {{.+}} {lamina.result_layouts = [#lamina.layout<P>]}
// GRADIENTS-LABEL: func.func @sharded_result
module attributes {lamina.world_size = 2 : i64} {
  func.func @sharded_result(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %a = func.call @fc1_block(%s, %w1) {lamina.module = "h.0"} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %y = lamina.matmul "fc2" %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %r = lamina.sync "fc2" %y <fwd_post, all_reduce> : tensor<4x8xf32>
    return %r : tensor<4x8xf32>
  }
  func.func private @fc1_block(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
    %0 = lamina.matmul "h.0.fc1" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = lamina.activation "h.0.fc1" gelu_tanh %0 : tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
}
