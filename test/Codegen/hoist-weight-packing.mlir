// RUN: lamina-opt %s --lamina-hoist-weight-packing | FileCheck %s
// RUN: lamina-opt %s --lamina-hoist-weight-packing --lamina-hoist-weight-packing | FileCheck %s

// CHECK: module attributes {lamina.weight_packing = {main = #lamina.packed_weights<[tensor<2x8x16xf32>] from [1]>}}
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<32x8xf32> {bufferization.writable = false}, %[[P:.+]]: tensor<2x8x16xf32> {bufferization.writable = false})
// CHECK-NOT: linalg.pack
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[P]] : tensor<4x8xf32>, tensor<2x8x16xf32>)
// CHECK-LABEL: func.func @main_pack_weights
// CHECK-SAME: (%{{.+}}: tensor<4x8xf32>, %[[W2:.+]]: tensor<32x8xf32> {bufferization.writable = false}) -> tensor<2x8x16xf32>
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x8x16xf32>
// CHECK: %[[PK:.+]] = linalg.pack %[[W2]] inner_dims_pos = [0] inner_tiles = [16] into %[[E]]
// CHECK: return %[[PK]]
// A packing of a computed value (not an argument) stays where it is.
// CHECK-LABEL: func.func @computed
// CHECK: linalg.pack
// CHECK-NOT: func.func @computed_pack_weights

#mx = affine_map<(m, n1, n0, k) -> (m, k)>
#mw = affine_map<(m, n1, n0, k) -> (n1, k, n0)>
#my = affine_map<(m, n1, n0, k) -> (m, n1, n0)>
func.func @main(%x: tensor<4x8xf32>, %w: tensor<32x8xf32> {bufferization.writable = false}) -> tensor<4x2x16xf32> attributes {llvm.emit_c_interface} {
  %e = tensor.empty() : tensor<2x8x16xf32>
  %p = linalg.pack %w inner_dims_pos = [0] inner_tiles = [16] into %e : tensor<32x8xf32> -> tensor<2x8x16xf32>
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x2x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<4x2x16xf32>) -> tensor<4x2x16xf32>
  %y = linalg.generic {indexing_maps = [#mx, #mw, #my], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %p : tensor<4x8xf32>, tensor<2x8x16xf32>) outs(%f : tensor<4x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x2x16xf32>
  return %y : tensor<4x2x16xf32>
}

func.func @computed(%w: tensor<32x8xf32>) -> tensor<2x8x16xf32> {
  %w2 = arith.addf %w, %w : tensor<32x8xf32>
  %e = tensor.empty() : tensor<2x8x16xf32>
  %p = linalg.pack %w2 inner_dims_pos = [0] inner_tiles = [16] into %e : tensor<32x8xf32> -> tensor<2x8x16xf32>
  return %p : tensor<2x8x16xf32>
}

// -----

// RUN: lamina-opt %s --split-input-file --lamina-hoist-weight-packing | FileCheck %s --check-prefix=CALLED
// A function called within the module (a pipeline stage) keeps its
// signature and its packing; its caller has no packing of its own.
// CALLED-LABEL: func.func @stage
// CALLED-SAME: (%{{.*}}: tensor<32x8xf32>) -> tensor<2x8x16xf32>
// CALLED: linalg.pack
// CALLED-NOT: func.func @stage_pack_weights
func.func @stage(%w: tensor<32x8xf32>) -> tensor<2x8x16xf32> {
  %e = tensor.empty() : tensor<2x8x16xf32>
  %p = linalg.pack %w inner_dims_pos = [0] inner_tiles = [16] into %e : tensor<32x8xf32> -> tensor<2x8x16xf32>
  return %p : tensor<2x8x16xf32>
}
func.func @caller(%w: tensor<32x8xf32>) -> tensor<2x8x16xf32> {
  %0 = call @stage(%w) : (tensor<32x8xf32>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

