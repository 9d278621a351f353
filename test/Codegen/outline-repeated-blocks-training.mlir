// RUN: lamina-opt %s --lamina-generate-backward="function=main" --lamina-decompose --lamina-fuse-epilogues --convert-lamina-to-linalg --convert-elementwise-to-linalg --canonicalize --cse --lamina-decompose-aggregates --lamina-outline-repeated-blocks=min-ops=4 | FileCheck %s

// A model of three equal residual blocks (fc1 with GELU, fc2, the residual
// add), differentiated, then lowered as lamina-cpu-pipeline lowers it: the
// forward is one block function called three times, each call with its
// layer's weights and the stream the previous call returns; the backward
// is one block function too, called from the last layer to the first with
// the saved values of that layer and the gradient the previous call
// returns, and it returns the layer's weight gradients and the stream's.

// CHECK-LABEL: func.func @main_forward(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32>, %[[W0:[^:]+]]: tensor<16x8xf32>, %[[B0:[^:]+]]: tensor<16xf32>, %[[V0:[^:]+]]: tensor<8x16xf32>, %[[W1:[^:]+]]: tensor<16x8xf32>, %[[B1:[^:]+]]: tensor<16xf32>, %[[V1:[^:]+]]: tensor<8x16xf32>, %[[W2:[^:]+]]: tensor<16x8xf32>, %[[B2:[^:]+]]: tensor<16xf32>, %[[V2:[^:]+]]: tensor<8x16xf32>)
// CHECK-NOT: linalg.{{matmul|generic|transpose}}
// CHECK: %[[F0:.+]]:3 = call @main_forward_block(%[[X]], %[[W0]], %[[B0]], %[[V0]])
// CHECK-NEXT: %[[F1:.+]]:3 = call @main_forward_block(%[[F0]]#2, %[[W1]], %[[B1]], %[[V1]])
// CHECK-NEXT: %[[F2:.+]]:3 = call @main_forward_block(%[[F1]]#2, %[[W2]], %[[B2]], %[[V2]])
// CHECK-NEXT: return %[[F2]]#2,
// CHECK-LABEL: func.func private @main_forward_block(
// CHECK-SAME: -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>)
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: call

// CHECK-LABEL: func.func @main_backward(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32>, %[[W0:[^:]+]]: tensor<16x8xf32>, %{{[^:]+}}: tensor<16xf32>, %[[V0:[^:]+]]: tensor<8x16xf32>, %[[W1:[^:]+]]: tensor<16x8xf32>, %{{[^:]+}}: tensor<16xf32>, %[[V1:[^:]+]]: tensor<8x16xf32>, %[[W2:[^:]+]]: tensor<16x8xf32>, %{{[^:]+}}: tensor<16xf32>, %[[V2:[^:]+]]: tensor<8x16xf32>,
// CHECK-NOT: linalg.{{matmul|generic|transpose}}
// CHECK: %[[G2:.+]]:4 = call @main_backward_block(%[[V2]], %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[W2]], %{{[^)]+}})
// CHECK-NEXT: %[[G1:.+]]:4 = call @main_backward_block(%[[V1]], %[[G2]]#3, %{{[^,]+}}, %{{[^,]+}}, %[[W1]], %{{[^)]+}})
// CHECK-NEXT: %[[G0:.+]]:4 = call @main_backward_block(%[[V0]], %[[G1]]#3, %{{[^,]+}}, %{{[^,]+}}, %[[W0]], %[[X]])
// CHECK-NEXT: return %[[G0]]#3, %[[G0]]#2, %[[G0]]#1, %[[G0]]#0, %[[G1]]#2, %[[G1]]#1, %[[G1]]#0, %[[G2]]#2, %[[G2]]#1, %[[G2]]#0
// CHECK-LABEL: func.func private @main_backward_block(
// CHECK-SAME: -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: call
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<16x8xf32>, %b0: tensor<16xf32>, %v0: tensor<8x16xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %v1: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %b2: tensor<16xf32>, %v2: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %h0 = lamina.linear_act "h.0.fc1" %x, %w0 bias %b0 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %o0 = lamina.linear "h.0.fc2" %h0, %v0 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r0 = arith.addf %x, %o0 : tensor<4x8xf32>
  %h1 = lamina.linear_act "h.1.fc1" %r0, %w1 bias %b1 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %o1 = lamina.linear "h.1.fc2" %h1, %v1 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r1 = arith.addf %r0, %o1 : tensor<4x8xf32>
  %h2 = lamina.linear_act "h.2.fc1" %r1, %w2 bias %b2 activation gelu_tanh : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %o2 = lamina.linear "h.2.fc2" %h2, %v2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r2 = arith.addf %r1, %o2 : tensor<4x8xf32>
  return %r2 : tensor<4x8xf32>
}
