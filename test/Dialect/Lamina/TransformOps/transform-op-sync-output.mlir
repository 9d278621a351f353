// RUN: lamina-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s

// A fwd_post sync on a layer without a sync slot syncs its output after it.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[LN:.*]] = lamina.layer_norm "ln"
// CHECK-NEXT: %[[S:.*]] = lamina.sync "ln" %[[LN]] <fwd_post, all_reduce>
// CHECK-NEXT: return %[[S]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @layer_norm(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
    %0 = lamina.layer_norm "ln" %x weight %g eps 1.0e-05 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %ln = transform.lamina.match %root path "ln" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %ln "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

// A gather or scatter acts on a linear layer's output, bias included (a
// column-parallel bias is sharded with the output features), and later
// fwd_post syncs chain after it: Slapo's "RS->SR" resharding, an
// all-gather then a scatter.
// CHECK-LABEL: func.func @chained
// CHECK: %[[L:.*]] = lamina.linear "fc" %{{.*}}, %{{.*}} bias
// CHECK-NEXT: %[[G:.*]] = lamina.sync "fc" %[[L]] <fwd_post, all_gather, axis = 1>
// CHECK-NEXT: %[[S:.*]] = lamina.sync "fc" %[[G]] <fwd_post, scatter, axis = 0>
// CHECK-NEXT: %[[U:.*]] = arith.addf %[[S]], %[[S]]
// CHECK-NEXT: return %[[U]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @chained(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %b: tensor<8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = arith.addf %0, %0 : tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %fc "fwd_post" "all_gather" axis 1 : !transform.any_op
      transform.lamina.sync %fc "fwd_post" "scatter" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// An all-reduce takes the sync slot, between the matmul and the bias; a
// second one chains after the layer.
// CHECK-LABEL: func.func @slot_then_output
// CHECK: %[[L:.*]] = lamina.linear_sync "fc" %{{.*}}, %{{.*}} sync <fwd_post, all_reduce> bias
// CHECK-NEXT: %[[G:.*]] = lamina.sync "fc" %[[L]] <fwd_post, all_reduce>
// CHECK-NEXT: return %[[G]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @slot_then_output(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {lamina.layout = #lamina.layout<S(1)>}, %b: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %fc "fwd_post" "all_reduce" : !transform.any_op
      %again = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
      transform.lamina.sync %again "fwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}

// -----

// fwd_post on the program itself syncs every result of every function.
// CHECK-LABEL: func.func @program
// CHECK: %[[L:.*]] = lamina.linear "fc"
// CHECK-NEXT: %[[S:.*]] = lamina.sync %[[L]] <fwd_post, all_gather, axis = 0>
// CHECK-NEXT: return %[[S]]
module attributes {lamina.world_size = 2 : i64} {
  func.func @program(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      transform.lamina.sync %root "fwd_post" "all_gather" axis 0 : !transform.any_op
      transform.yield
    }
  }
}

// -----

// On the program's inputs a sync has no single place: it belongs on the
// layers reading them.
module attributes {lamina.world_size = 2 : i64} {
  func.func @program_input(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %0 = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op) {
      // expected-error @+1 {{a sync on the whole program acts on its results (fwd_post); sync the input of the layers that read the program inputs}}
      transform.lamina.sync %root "bwd_post" "all_reduce" : !transform.any_op
      transform.yield
    }
  }
}
