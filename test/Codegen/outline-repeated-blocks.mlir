// RUN: lamina-opt %s --split-input-file --lamina-outline-repeated-blocks=min-ops=4 | FileCheck %s
// RUN: lamina-opt %s --split-input-file --lamina-outline-repeated-blocks | FileCheck %s --check-prefix=SHORT

// Three repetitions of four ops: one function, three calls. Each
// repetition's weight and its own constant (0.5, 0.25, 0.125) are
// arguments; the fill of ones every repetition reads is rebuilt inside.
// The first repetition's sum is read after it (returned): the function
// returns it for every call. Below 16 ops a segment stays as it is.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4xf32>, %[[W0:[^:]+]]: tensor<4xf32>, %[[W1:[^:]+]]: tensor<4xf32>, %[[W2:[^:]+]]: tensor<4xf32>)
// CHECK-DAG: %[[S0:.+]] = arith.constant dense<5.000000e-01>
// CHECK-DAG: %[[S1:.+]] = arith.constant dense<2.500000e-01>
// CHECK-DAG: %[[S2:.+]] = arith.constant dense<1.250000e-01>
// CHECK: %[[R0:.+]]:2 = call @f_block(%[[X]], %[[W0]], %[[S0]])
// CHECK-NEXT: %[[R1:.+]]:2 = call @f_block(%[[R0]]#1, %[[W1]], %[[S1]])
// CHECK-NEXT: %[[R2:.+]]:2 = call @f_block(%[[R1]]#1, %[[W2]], %[[S2]])
// CHECK-NEXT: return %[[R2]]#1, %[[R0]]#0
// CHECK-LABEL: func.func private @f_block(
// CHECK-SAME: %[[A:[^:]+]]: tensor<4xf32>, %[[B:[^:]+]]: tensor<4xf32>, %[[C:[^:]+]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-SAME: attributes {passthrough = ["noinline"]}
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[EMPTY:.+]] = tensor.empty()
// CHECK: %[[ONES:.+]] = linalg.fill ins(%[[ONE]] : f32) outs(%[[EMPTY]]
// CHECK: %[[M:.+]] = arith.mulf %[[A]], %[[B]]
// CHECK: %[[P:.+]] = arith.addf %[[M]], %[[C]]
// CHECK: %[[Q:.+]] = arith.addf %[[P]], %[[ONES]]
// CHECK: %[[T:.+]] = math.tanh %[[Q]]
// CHECK: return %[[P]], %[[T]]
// SHORT-LABEL: func.func @f(
// SHORT-NOT: call
// SHORT-NOT: func.func private
func.func @f(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<4xf32>
  %ones = linalg.fill ins(%one : f32) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %s0 = arith.constant dense<0.5> : tensor<4xf32>
  %s1 = arith.constant dense<0.25> : tensor<4xf32>
  %s2 = arith.constant dense<0.125> : tensor<4xf32>
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %s0 : tensor<4xf32>
  %c0 = arith.addf %b0, %ones : tensor<4xf32>
  %d0 = math.tanh %c0 : tensor<4xf32>
  %a1 = arith.mulf %d0, %w1 : tensor<4xf32>
  %b1 = arith.addf %a1, %s1 : tensor<4xf32>
  %c1 = arith.addf %b1, %ones : tensor<4xf32>
  %d1 = math.tanh %c1 : tensor<4xf32>
  %a2 = arith.mulf %d1, %w2 : tensor<4xf32>
  %b2 = arith.addf %a2, %s2 : tensor<4xf32>
  %c2 = arith.addf %b2, %ones : tensor<4xf32>
  %d2 = math.tanh %c2 : tensor<4xf32>
  return %d2, %b0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The same ops, but the second repetition squares its input where the
// others multiply by their weight: it computes something else and stays
// inline, between the calls of the first and the third.
// CHECK-LABEL: func.func @g(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4xf32>, %[[W0:[^:]+]]: tensor<4xf32>, %[[W1:[^:]+]]: tensor<4xf32>, %[[W2:[^:]+]]: tensor<4xf32>)
// CHECK: %[[R0:.+]] = call @g_block(%[[X]], %[[W0]])
// CHECK-NEXT: %[[SQUARE:.+]] = arith.mulf %[[R0]], %[[R0]]
// CHECK-NEXT: arith.addf %[[SQUARE]], %[[W1]]
// CHECK-NEXT: math.exp
// CHECK-NEXT: %[[LAST:.+]] = math.tanh
// CHECK-NEXT: %[[R2:.+]] = call @g_block(%[[LAST]], %[[W2]])
// CHECK-NEXT: return %[[R2]]
// CHECK-LABEL: func.func private @g_block(
// CHECK-SAME: %[[A:[^:]+]]: tensor<4xf32>, %[[B:[^:]+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK: arith.mulf %[[A]], %[[B]]
func.func @g(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %w0 : tensor<4xf32>
  %c0 = math.exp %b0 : tensor<4xf32>
  %d0 = math.tanh %c0 : tensor<4xf32>
  %a1 = arith.mulf %d0, %d0 : tensor<4xf32>
  %b1 = arith.addf %a1, %w1 : tensor<4xf32>
  %c1 = math.exp %b1 : tensor<4xf32>
  %d1 = math.tanh %c1 : tensor<4xf32>
  %a2 = arith.mulf %d1, %w2 : tensor<4xf32>
  %b2 = arith.addf %a2, %w2 : tensor<4xf32>
  %c2 = math.exp %b2 : tensor<4xf32>
  %d2 = math.tanh %c2 : tensor<4xf32>
  return %d2 : tensor<4xf32>
}

// -----

// The third repetition's add is fast-math: the run ends before it, and
// the two first repetitions are outlined.
// CHECK-LABEL: func.func @h(
// CHECK: call @h_block
// CHECK-NEXT: call @h_block
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf {{.*}} fastmath<fast>
// CHECK-LABEL: func.func private @h_block(
func.func @h(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %w0 : tensor<4xf32>
  %c0 = math.exp %b0 : tensor<4xf32>
  %d0 = math.tanh %c0 : tensor<4xf32>
  %a1 = arith.mulf %d0, %w1 : tensor<4xf32>
  %b1 = arith.addf %a1, %w1 : tensor<4xf32>
  %c1 = math.exp %b1 : tensor<4xf32>
  %d1 = math.tanh %c1 : tensor<4xf32>
  %a2 = arith.mulf %d1, %w2 : tensor<4xf32>
  %b2 = arith.addf %a2, %w2 fastmath<fast> : tensor<4xf32>
  %c2 = math.exp %b2 : tensor<4xf32>
  %d2 = math.tanh %c2 : tensor<4xf32>
  return %d2 : tensor<4xf32>
}

// -----

// CSE made the second repetition's own constant (2.0) the very value all
// three add (2.0): a constant is compared use by use, not by identity, so
// the repetitions still match. The shared 2.0 is rebuilt inside; each
// repetition's own constant is an argument.
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4xf32>, %[[W0:[^:]+]]: tensor<4xf32>, %[[W1:[^:]+]]: tensor<4xf32>, %[[W2:[^:]+]]: tensor<4xf32>)
// CHECK-DAG: %[[TWO:.+]] = arith.constant dense<2.000000e+00>
// CHECK-DAG: %[[S0:.+]] = arith.constant dense<5.000000e-01>
// CHECK-DAG: %[[S2:.+]] = arith.constant dense<1.250000e-01>
// CHECK: %[[R0:.+]] = call @k_block(%[[X]], %[[W0]], %[[S0]])
// CHECK-NEXT: %[[R1:.+]] = call @k_block(%[[R0]], %[[W1]], %[[TWO]])
// CHECK-NEXT: call @k_block(%[[R1]], %[[W2]], %[[S2]])
// CHECK-LABEL: func.func private @k_block(
// CHECK-SAME: %[[A:[^:]+]]: tensor<4xf32>, %[[B:[^:]+]]: tensor<4xf32>, %[[C:[^:]+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[SHARED:.+]] = arith.constant dense<2.000000e+00>
// CHECK: %[[M:.+]] = arith.mulf %[[A]], %[[B]]
// CHECK: %[[P:.+]] = arith.addf %[[M]], %[[C]]
// CHECK: arith.addf %[[P]], %[[SHARED]]
func.func @k(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %s0 = arith.constant dense<0.5> : tensor<4xf32>
  %s2 = arith.constant dense<0.125> : tensor<4xf32>
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %s0 : tensor<4xf32>
  %c0 = arith.addf %b0, %two : tensor<4xf32>
  %d0 = math.tanh %c0 : tensor<4xf32>
  %a1 = arith.mulf %d0, %w1 : tensor<4xf32>
  %b1 = arith.addf %a1, %two : tensor<4xf32>
  %c1 = arith.addf %b1, %two : tensor<4xf32>
  %d1 = math.tanh %c1 : tensor<4xf32>
  %a2 = arith.mulf %d1, %w2 : tensor<4xf32>
  %b2 = arith.addf %a2, %s2 : tensor<4xf32>
  %c2 = arith.addf %b2, %two : tensor<4xf32>
  %d2 = math.tanh %c2 : tensor<4xf32>
  return %d2 : tensor<4xf32>
}

// -----

// Repetitions whose buffer is read after them (by a wait at the end, as
// for an asynchronous runtime call started inside) stay inline: a call
// would return the buffer, and deallocation would give the caller a copy
// of what may still be written.
// CHECK-LABEL: func.func @buffer_read_after(
// CHECK-NOT: call @buffer_read_after_block
// CHECK-COUNT-3: bufferization.to_buffer
// CHECK-COUNT-3: call @wait(
// SHORT-LABEL: func.func @buffer_read_after(
func.func @buffer_read_after(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %m0 = arith.mulf %x, %w0 : tensor<4xf32>
  %a0 = arith.addf %m0, %w0 : tensor<4xf32>
  %t0 = math.tanh %a0 : tensor<4xf32>
  %b0 = bufferization.to_buffer %t0 : tensor<4xf32> to memref<4xf32>
  %u0 = memref.cast %b0 : memref<4xf32> to memref<*xf32>
  %m1 = arith.mulf %t0, %w1 : tensor<4xf32>
  %a1 = arith.addf %m1, %w1 : tensor<4xf32>
  %t1 = math.tanh %a1 : tensor<4xf32>
  %b1 = bufferization.to_buffer %t1 : tensor<4xf32> to memref<4xf32>
  %u1 = memref.cast %b1 : memref<4xf32> to memref<*xf32>
  %m2 = arith.mulf %t1, %w2 : tensor<4xf32>
  %a2 = arith.addf %m2, %w2 : tensor<4xf32>
  %t2 = math.tanh %a2 : tensor<4xf32>
  %b2 = bufferization.to_buffer %t2 : tensor<4xf32> to memref<4xf32>
  %u2 = memref.cast %b2 : memref<4xf32> to memref<*xf32>
  func.call @wait(%u0) : (memref<*xf32>) -> ()
  func.call @wait(%u1) : (memref<*xf32>) -> ()
  func.call @wait(%u2) : (memref<*xf32>) -> ()
  return %t2 : tensor<4xf32>
}
func.func private @wait(memref<*xf32>)
