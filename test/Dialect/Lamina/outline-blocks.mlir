// RUN: lamina-opt %s --split-input-file --lamina-outline-blocks | FileCheck %s

// Three equal blocks h.0, h.1, h.2 (a layer norm, a linear layer with its
// dropout, a residual add): one function of one block, taking the block's
// input, its four parameters, the seed and the offset base, and three calls
// with each instance's parameters. Each instance's dropout had offset
// 1 + 2i and 2 + 2i; the block's are 0 and 1 from its call's base (1, 3, 5).
// The lm_head and the embedding are no instance: they stay in @main.

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[G0:[a-z0-9]+]]: tensor<8xf32>, %[[B0:[a-z0-9]+]]: tensor<8xf32>, %[[W0:[a-z0-9]+]]: tensor<8x8xf32>, %[[C0:[a-z0-9]+]]: tensor<8xf32>, %[[G1:[a-z0-9]+]]: tensor<8xf32>, %[[B1:[a-z0-9]+]]: tensor<8xf32>, %[[W1:[a-z0-9]+]]: tensor<8x8xf32>, %[[C1:[a-z0-9]+]]: tensor<8xf32>, %[[G2:[a-z0-9]+]]: tensor<8xf32>, %[[B2:[a-z0-9]+]]: tensor<8xf32>, %[[W2:[a-z0-9]+]]: tensor<8x8xf32>, %[[C2:[a-z0-9]+]]: tensor<8xf32>, %[[HEAD:[a-z0-9]+]]: tensor<16x8xf32>, %[[SEED:[a-z0-9]+]]: i64)
// CHECK: %[[E:.+]] = lamina.dropout "drop" %[[X]] <p = 0.1, training> seed %[[SEED]]
// CHECK: %[[BASE0:.+]] = arith.constant 1 : i64
// CHECK: %[[H0:.+]] = call @h_block(%[[E]], %[[G0]], %[[B0]], %[[W0]], %[[C0]], %[[SEED]], %[[BASE0]]) {lamina.module = "h.0"}
// CHECK: %[[BASE1:.+]] = arith.constant 3 : i64
// CHECK: %[[H1:.+]] = call @h_block(%[[H0]], %[[G1]], %[[B1]], %[[W1]], %[[C1]], %[[SEED]], %[[BASE1]]) {lamina.module = "h.1"}
// CHECK: %[[BASE2:.+]] = arith.constant 5 : i64
// CHECK: %[[H2:.+]] = call @h_block(%[[H1]], %[[G2]], %[[B2]], %[[W2]], %[[C2]], %[[SEED]], %[[BASE2]]) {lamina.module = "h.2"}
// CHECK: %[[Y:.+]] = lamina.linear "lm_head" %[[H2]], %[[HEAD]]
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func private @h_block(
// CHECK-SAME: %[[BX:[a-z0-9]+]]: tensor<4x8xf32>, %[[BG:[a-z0-9]+]]: tensor<8xf32>, %[[BB:[a-z0-9]+]]: tensor<8xf32>, %[[BW:[a-z0-9]+]]: tensor<8x8xf32>, %[[BC:[a-z0-9]+]]: tensor<8xf32>, %[[BSEED:[a-z0-9]+]]: i64, %[[BBASE:[a-z0-9]+]]: i64) -> tensor<4x8xf32> attributes {lamina.block = "h"}
// CHECK: %[[N:.+]] = lamina.layer_norm "h.0.ln" %[[BX]] weight %[[BG]] bias %[[BB]]
// CHECK: %[[L:.+]] = lamina.linear "h.0.fc" %[[N]], %[[BW]] bias %[[BC]]
// CHECK: %[[D1:.+]] = lamina.dropout "h.0.drop1" %[[L]] <p = 0.1, training> seed %[[BSEED]] offset_base %[[BBASE]]
// CHECK: %[[D2:.+]] = lamina.dropout "h.0.drop2" %[[D1]] <p = 0.1, training, offset = 1> seed %[[BSEED]] offset_base %[[BBASE]]
// CHECK: %[[R:.+]] = arith.addf %[[BX]], %[[D2]] {lamina.module = "h.0"}
// CHECK: return %[[R]]
// CHECK-NOT: func.func
func.func @main(%x: tensor<4x8xf32>,
    %g0: tensor<8xf32>, %b0: tensor<8xf32>, %w0: tensor<8x8xf32>, %c0: tensor<8xf32>,
    %g1: tensor<8xf32>, %b1: tensor<8xf32>, %w1: tensor<8x8xf32>, %c1: tensor<8xf32>,
    %g2: tensor<8xf32>, %b2: tensor<8xf32>, %w2: tensor<8x8xf32>, %c2: tensor<8xf32>,
    %head: tensor<16x8xf32>, %seed: i64) -> tensor<4x16xf32> {
  %e = lamina.dropout "drop" %x <p = 0.1, training> seed %seed : tensor<4x8xf32>
  %n0 = lamina.layer_norm "h.0.ln" %e weight %g0 bias %b0 eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l0 = lamina.linear "h.0.fc" %n0, %w0 bias %c0 : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p0 = lamina.dropout "h.0.drop1" %l0 <p = 0.1, training, offset = 1> seed %seed : tensor<4x8xf32>
  %q0 = lamina.dropout "h.0.drop2" %p0 <p = 0.1, training, offset = 2> seed %seed : tensor<4x8xf32>
  %h0 = arith.addf %e, %q0 {lamina.module = "h.0"} : tensor<4x8xf32>
  %n1 = lamina.layer_norm "h.1.ln" %h0 weight %g1 bias %b1 eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l1 = lamina.linear "h.1.fc" %n1, %w1 bias %c1 : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p1 = lamina.dropout "h.1.drop1" %l1 <p = 0.1, training, offset = 3> seed %seed : tensor<4x8xf32>
  %q1 = lamina.dropout "h.1.drop2" %p1 <p = 0.1, training, offset = 4> seed %seed : tensor<4x8xf32>
  %h1 = arith.addf %h0, %q1 {lamina.module = "h.1"} : tensor<4x8xf32>
  %n2 = lamina.layer_norm "h.2.ln" %h1 weight %g2 bias %b2 eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l2 = lamina.linear "h.2.fc" %n2, %w2 bias %c2 : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p2 = lamina.dropout "h.2.drop1" %l2 <p = 0.1, training, offset = 5> seed %seed : tensor<4x8xf32>
  %q2 = lamina.dropout "h.2.drop2" %p2 <p = 0.1, training, offset = 6> seed %seed : tensor<4x8xf32>
  %h2 = arith.addf %h1, %q2 {lamina.module = "h.2"} : tensor<4x8xf32>
  %y = lamina.linear "lm_head" %h2, %head : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// What makes instances differ: h.1's layer is checkpointed, h.3's hidden
// size differs. h.0 and h.2 share a block; h.1 and h.3 stay inline. A
// pipeline cut after h.2's last op moves to its call. Ops that name no
// module between two of an instance's ops (the constant) are the
// instance's; layers of a list of lists (`h.0.experts.1`) are h.0's.

// CHECK-LABEL: func.func @differ(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>
// CHECK: %[[H0:.+]] = call @h_block(%[[X]], %{{.+}}) {lamina.module = "h.0"}
// CHECK: lamina.linear "h.1.experts.0" {{.+}} {lamina.checkpoint}
// CHECK: %[[H2:.+]] = call @h_block(%{{.+}}, %{{.+}}) {lamina.module = "h.2", lamina.pipeline_cut}
// CHECK: lamina.linear "h.3.experts.0" %[[H2]]
// CHECK-LABEL: func.func private @h_block(
// CHECK: lamina.linear "h.0.experts.0"
// CHECK: arith.constant
// CHECK: arith.mulf
// CHECK-NOT: lamina.pipeline_cut
// CHECK: return
func.func @differ(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>,
                  %w2: tensor<8x8xf32>, %w3: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %l0 = lamina.linear "h.0.experts.0" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %two0 = arith.constant dense<2.0> : tensor<4x8xf32>
  %h0 = arith.mulf %l0, %two0 {lamina.module = "h.0"} : tensor<4x8xf32>
  %l1 = lamina.linear "h.1.experts.0" %h0, %w1 {lamina.checkpoint} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %two1 = arith.constant dense<2.0> : tensor<4x8xf32>
  %h1 = arith.mulf %l1, %two1 {lamina.module = "h.1"} : tensor<4x8xf32>
  %l2 = lamina.linear "h.2.experts.0" %h1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %two2 = arith.constant dense<2.0> : tensor<4x8xf32>
  %h2 = arith.mulf %l2, %two2 {lamina.module = "h.2", lamina.pipeline_cut} : tensor<4x8xf32>
  %l3 = lamina.linear "h.3.experts.0" %h2, %w3 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %two3 = arith.constant dense<2.0> : tensor<4x16xf32>
  %h3 = arith.mulf %l3, %two3 {lamina.module = "h.3"} : tensor<4x16xf32>
  return %h3 : tensor<4x16xf32>
}

// -----

// Modules checkpointed whole are named on the block, in its first instance
// (h.1.mlp → h.0.mlp; the whole list stays as it is); others name none of
// its ops.

// CHECK-LABEL: func.func @checkpointed(
// CHECK-COUNT-2: call @h_block
// CHECK-LABEL: func.func private @h_block(
// CHECK-SAME: attributes {lamina.block = "h", lamina.checkpoint_modules = ["h.0.mlp", "h"]}
func.func @checkpointed(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.checkpoint_modules = ["h.0.mlp", "h.1.mlp", "h", "layers"]} {
  %l0 = lamina.linear "h.0.mlp.fc" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l1 = lamina.linear "h.1.mlp.fc" %l0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %l1 : tensor<4x8xf32>
}

// -----

// Only h.1 of a list checkpointed as a module: h.0 and h.2 share a block,
// h.1 stays inline (its recomputation is not theirs).

// CHECK-LABEL: func.func @one_checkpointed(
// CHECK: call @h_block(%{{.+}}) {lamina.module = "h.0"}
// CHECK: lamina.linear "h.1.fc"
// CHECK: call @h_block(%{{.+}}) {lamina.module = "h.2"}
// CHECK-LABEL: func.func private @h_block(
// CHECK-SAME: attributes {lamina.block = "h"} {
func.func @one_checkpointed(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {lamina.checkpoint_modules = ["h.1"]} {
  %l0 = lamina.linear "h.0.fc" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l1 = lamina.linear "h.1.fc" %l0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l2 = lamina.linear "h.2.fc" %l1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %l2 : tensor<4x8xf32>
}

// -----

// A program that shards values on two ranks: instances are equal only
// where their inputs have the same layouts (a block is partitioned once).
// h.0 and h.2 square an S(0) argument, h.1 a replicated one: h.0 and h.2
// call one function, h.1 stays inline.

// CHECK-LABEL: func.func @sharded(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %[[B:[a-z0-9]+]]: tensor<4x8xf32>, %[[C:[a-z0-9]+]]: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}
// CHECK: %[[H0:.+]] = call @h_block(%[[A]]) {lamina.module = "h.0"}
// CHECK: %[[H1:.+]] = arith.mulf %[[B]], %[[B]] {lamina.module = "h.1"}
// CHECK: %[[H2:.+]] = call @h_block(%[[C]]) {lamina.module = "h.2"}
// CHECK: return %[[H0]], %[[H1]], %[[H2]]
// CHECK-LABEL: func.func private @h_block(
// CHECK: arith.mulf
// CHECK-NOT: func.func private
module attributes {lamina.world_size = 2 : i64} {
  func.func @sharded(%a: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>},
                     %b: tensor<4x8xf32>,
                     %c: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>})
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
    %0 = arith.mulf %a, %a {lamina.module = "h.0"} : tensor<4x8xf32>
    %1 = arith.mulf %b, %b {lamina.module = "h.1"} : tensor<4x8xf32>
    %2 = arith.mulf %c, %c {lamina.module = "h.2"} : tensor<4x8xf32>
    return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// An all_gather sync left open takes the transpose its gradient needs:
// h.0's and h.2's results are returned (whole gradients: each rank keeps
// its block), h.1's feeds a column-parallel head (partial gradients: a
// reduce-scatter). h.0 and h.2 call one function; h.1 stays inline.

// CHECK-LABEL: func.func @open_gathers(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x16xf32> {{.+}}, %[[Y:[a-z0-9]+]]: tensor<4x16xf32> {{.+}}, %[[Z:[a-z0-9]+]]: tensor<4x16xf32>
// CHECK: %[[A:.+]] = call @h_block(%[[X]]) {lamina.module = "h.0"}
// CHECK: %[[B:.+]] = lamina.sync "h.1.g" %[[Y]]
// CHECK: %[[C:.+]] = call @h_block(%[[Z]]) {lamina.module = "h.2"}
// CHECK: lamina.matmul "head" %[[B]]
// CHECK-LABEL: func.func private @h_block(
// CHECK: lamina.sync "h.0.g"
// CHECK-NOT: func.func private
module attributes {lamina.world_size = 2 : i64} {
  func.func @open_gathers(
      %x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %y: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %z: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w: tensor<32x16xf32> {lamina.layout = #lamina.layout<S(0)>})
      -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x32xf32>) {
    %a = lamina.sync "h.0.g" %x <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    %b = lamina.sync "h.1.g" %y <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    %c = lamina.sync "h.2.g" %z <fwd_post, all_gather, axis = 1> : tensor<4x16xf32>
    %m = lamina.matmul "head" %b, %w : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
    %g = lamina.sync "head" %m <fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false> : tensor<4x32xf32>
    return %a, %c, %g : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x32xf32>
  }
}

// -----

// Values built from constants alone that a folder made once for several
// layers (h.1 reads h.0's constant, and its filled tensor) and a value
// nothing reads: each instance gets its own copy, unnamed, right before
// its first use, and the dead one goes. The instances are then equal.

// CHECK-LABEL: func.func @shared_constant(
// CHECK-NOT: dense<3.0
// CHECK: call @h_block(%{{.+}}, %{{.+}}) {lamina.module = "h.0"}
// CHECK: call @h_block(%{{.+}}, %{{.+}}) {lamina.module = "h.1"}
// CHECK-LABEL: func.func private @h_block(
// CHECK: lamina.linear "h.0.fc"
// CHECK: %[[C:.+]] = arith.constant dense<2.000000e+00> : tensor<4x8xf32>
// CHECK: %[[M:.+]] = arith.mulf %{{.+}}, %[[C]] {lamina.module = "h.0"}
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf %[[M]], %[[F]] {lamina.module = "h.0"}
func.func @shared_constant(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %two = arith.constant {lamina.module = "h.0"} dense<2.0> : tensor<4x8xf32>
  %dead = arith.constant {lamina.module = "h.0"} dense<3.0> : tensor<4x8xf32>
  %one = arith.constant {lamina.module = "h.0"} 1.0 : f32
  %empty = tensor.empty() {lamina.module = "h.0"} : tensor<4x8xf32>
  %ones = linalg.fill {lamina.module = "h.0"} ins(%one : f32) outs(%empty : tensor<4x8xf32>) -> tensor<4x8xf32>
  %l0 = lamina.linear "h.0.fc" %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %m0 = arith.mulf %l0, %two {lamina.module = "h.0"} : tensor<4x8xf32>
  %h0 = arith.addf %m0, %ones {lamina.module = "h.0"} : tensor<4x8xf32>
  %l1 = lamina.linear "h.1.fc" %h0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %m1 = arith.mulf %l1, %two {lamina.module = "h.1"} : tensor<4x8xf32>
  %h1 = arith.addf %m1, %ones {lamina.module = "h.1"} : tensor<4x8xf32>
  return %h1 : tensor<4x8xf32>
}

// -----

// Layers with their own dropout epilogue (a schedule fused bias and
// dropout): their offsets too are taken from the call's base.

// CHECK-LABEL: func.func @fused_dropouts(
// CHECK: %[[B0:.+]] = arith.constant 4 : i64
// CHECK: call @h_block(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[B0]]) {lamina.module = "h.0"}
// CHECK: %[[B1:.+]] = arith.constant 9 : i64
// CHECK: call @h_block(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[B1]]) {lamina.module = "h.1"}
// CHECK-LABEL: func.func private @h_block(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4x8xf32>, %{{[a-z0-9]+}}: tensor<8x8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %[[SEED:[a-z0-9]+]]: i64, %[[BASE:[a-z0-9]+]]: i64)
// CHECK: lamina.linear_dropout "h.0.fc" {{.+}} dropout <p = 0.1, training> seed %[[SEED]] offset_base %[[BASE]]
func.func @fused_dropouts(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %b0: tensor<8xf32>,
                          %w1: tensor<8x8xf32>, %b1: tensor<8xf32>, %seed: i64) -> tensor<4x8xf32> {
  %l0 = lamina.linear_dropout "h.0.fc" %x, %w0 bias %b0 dropout <p = 0.1, training, offset = 4> seed %seed : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, i64) -> tensor<4x8xf32>
  %l1 = lamina.linear_dropout "h.1.fc" %l0, %w1 bias %b1 dropout <p = 0.1, training, offset = 9> seed %seed : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, i64) -> tensor<4x8xf32>
  return %l1 : tensor<4x8xf32>
}
