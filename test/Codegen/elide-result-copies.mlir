// RUN: lamina-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lamina-elide-result-copies))' | FileCheck %s

// A block's result, written into a buffer allocated for the call and then
// copied into the out-parameter: the call writes the out-parameter.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:[^:]+]]: memref<4xf32>, %[[OUT:[^:]+]]: memref<4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @f_block(%[[X]], %[[OUT]])
// CHECK-NOT: memref.copy
// CHECK: return
func.func private @f_block(memref<4xf32>, memref<4xf32>)
func.func @f(%x: memref<4xf32>, %out: memref<4xf32>) {
  %buffer = memref.alloc() : memref<4xf32>
  call @f_block(%x, %buffer) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %buffer, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// The buffer is read after the copy, the out-parameter is read besides
// the copy, the source is an argument, the types differ: the copies stay.
// CHECK-LABEL: func.func @g(
// CHECK-COUNT-4: memref.copy
func.func private @g_block(memref<4xf32>, memref<4xf32>)
func.func @g(%x: memref<4xf32>, %out0: memref<4xf32>, %out1: memref<4xf32>,
             %out2: memref<4xf32>, %out3: memref<4xf32, strided<[1], offset: ?>>) {
  %read_after = memref.alloc() : memref<4xf32>
  call @g_block(%x, %read_after) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %read_after, %out0 : memref<4xf32> to memref<4xf32>
  call @g_block(%read_after, %x) : (memref<4xf32>, memref<4xf32>) -> ()
  %out_read = memref.alloc() : memref<4xf32>
  call @g_block(%out1, %out_read) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %out_read, %out1 : memref<4xf32> to memref<4xf32>
  memref.copy %x, %out2 : memref<4xf32> to memref<4xf32>
  %other_type = memref.alloc() : memref<4xf32>
  call @g_block(%x, %other_type) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %other_type, %out3 : memref<4xf32> to memref<4xf32, strided<[1], offset: ?>>
  return
}
