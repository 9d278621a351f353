// RUN: lamina-opt %s --lamina-result-shaped-allocations --split-input-file | FileCheck %s
// RUN: lamina-run %s --entry=through_loop --random-inputs --seed=3 | FileCheck %s --check-prefix=EXEC
// RUN: lamina-run %s --entry=shared_empty | FileCheck %s --check-prefix=SHARED

// The empty tensor a returned collapse_shape's source was written into (a
// fill, then a loop) becomes the expand_shape of one of the result's shape.
// CHECK-LABEL: func.func @through_loop
// CHECK: %[[WHOLE:.+]] = tensor.empty() : tensor<8x32xf32>
// CHECK: %[[VIEW:.+]] = tensor.expand_shape %[[WHOLE]] {{\[}}[0], [1, 2]] output_shape [8, 2, 16] : tensor<8x32xf32> into tensor<8x2x16xf32>
// CHECK-NOT: tensor.empty
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[VIEW]] : tensor<8x2x16xf32>)
// CHECK: scf.for
// CHECK: tensor.collapse_shape
// Run: the same numbers as x + 1 computed without loop or reshape.
// EXEC: result 0: f32[8, 32] min [[MIN:.+]] max [[MAX:.+]] mean [[MEAN:.+]]
// EXEC: result 1: f32[8, 2, 16] min [[MIN]] max [[MAX]] mean [[MEAN]]
func.func @through_loop(%x: tensor<8x2x16xf32>) -> (tensor<8x32xf32>, tensor<8x2x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8x2x16xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<8x2x16xf32>) -> tensor<8x2x16xf32>
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %f) -> (tensor<8x2x16xf32>) {
    %xs = tensor.extract_slice %x[%i, 0, 0] [1, 2, 16] [1, 1, 1] : tensor<8x2x16xf32> to tensor<1x2x16xf32>
    %as = tensor.extract_slice %acc[%i, 0, 0] [1, 2, 16] [1, 1, 1] : tensor<8x2x16xf32> to tensor<1x2x16xf32>
    %s = linalg.add ins(%xs, %as : tensor<1x2x16xf32>, tensor<1x2x16xf32>) outs(%as : tensor<1x2x16xf32>) -> tensor<1x2x16xf32>
    %n = tensor.insert_slice %s into %acc[%i, 0, 0] [1, 2, 16] [1, 1, 1] : tensor<1x2x16xf32> into tensor<8x2x16xf32>
    scf.yield %n : tensor<8x2x16xf32>
  }
  %y = tensor.collapse_shape %r [[0], [1, 2]] : tensor<8x2x16xf32> into tensor<8x32xf32>
  %ones = tensor.splat %one : tensor<8x2x16xf32>
  %reference = arith.addf %x, %ones : tensor<8x2x16xf32>
  return %y, %reference : tensor<8x32xf32>, tensor<8x2x16xf32>
}

// -----

// A returned expand_shape: the empty tensor becomes a collapse_shape.
// CHECK-LABEL: func.func @expanded
// CHECK: %[[WHOLE:.+]] = tensor.empty() : tensor<4x2x8xf32>
// CHECK: %[[VIEW:.+]] = tensor.collapse_shape %[[WHOLE]] {{\[}}[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
// CHECK: linalg.exp ins(%{{.+}} : tensor<4x16xf32>) outs(%[[VIEW]] : tensor<4x16xf32>)
func.func @expanded(%x: tensor<4x16xf32>) -> tensor<4x2x8xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.exp ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = tensor.expand_shape %r [[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
  return %y : tensor<4x2x8xf32>
}

// -----

// A reshaped argument, or a value whose origin is not an empty tensor (an
// argument written into), is left as it is.
// CHECK-LABEL: func.func @not_from_empty
// CHECK-NOT: tensor.empty
// CHECK: linalg.exp ins(%{{.+}}) outs(%[[ARG:.+]] : tensor<4x16xf32>)
// CHECK: tensor.expand_shape
// CHECK: tensor.collapse_shape %arg0
func.func @not_from_empty(%a: tensor<4x2x8xf32>, %b: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x2x8xf32>) {
  %r = linalg.exp ins(%b : tensor<4x16xf32>) outs(%b : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = tensor.expand_shape %r [[0], [1, 2]] output_shape [4, 2, 8] : tensor<4x16xf32> into tensor<4x2x8xf32>
  %z = tensor.collapse_shape %a [[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
  return %z, %y : tensor<4x16xf32>, tensor<4x2x8xf32>
}

// -----

// One empty tensor that two results were written into (CSE merges equal
// empties): each use gets an allocation of its own, and the shared empty
// tensor goes away.
// CHECK-LABEL: func.func @shared_empty
// CHECK-DAG: %[[A:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK-DAG: %[[B:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK-DAG: %[[VA:.+]] = tensor.expand_shape %[[A]]
// CHECK-DAG: %[[VB:.+]] = tensor.expand_shape %[[B]]
// CHECK-NOT: tensor.empty() : tensor<4x2x8xf32>
// CHECK-DAG: linalg.fill ins(%{{.+}} : f32) outs(%[[VA]] : tensor<4x2x8xf32>)
// CHECK-DAG: linalg.fill ins(%{{.+}} : f32) outs(%[[VB]] : tensor<4x2x8xf32>)
// Run: the two results stay apart (zeros and ones).
// SHARED: result 0: f32[4, 16] min 0 max 0 mean 0
// SHARED: result 1: f32[4, 16] min 1 max 1 mean 1
func.func @shared_empty() -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x2x8xf32>
  %a = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
  %b = linalg.fill ins(%one : f32) outs(%e : tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
  %ya = tensor.collapse_shape %a [[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
  %yb = tensor.collapse_shape %b [[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
  return %ya, %yb : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A dynamic result shape is left as it is.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x2x8xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<?x2x8xf32>)
func.func @dynamic(%n: index) -> tensor<?x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x2x8xf32>
  %a = linalg.fill ins(%zero : f32) outs(%e : tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  %y = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x2x8xf32> into tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
