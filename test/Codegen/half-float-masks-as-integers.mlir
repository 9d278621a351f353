// RUN: lamina-opt %s --lamina-half-float-masks-as-integers | FileCheck %s

// Masked stores and loads of bf16 and f16 lanes (a partial tile) move i16
// lanes between bitcasts; the pass-through lanes of a load too. f32 lanes
// are left as they are.

// CHECK-LABEL: llvm.func @partial_tiles(
// CHECK-SAME: %[[P:.+]]: !llvm.ptr, %[[MASK:.+]]: vector<16xi1>, %[[V:.+]]: vector<16xbf16>, %[[H:.+]]: vector<8xf16>, %[[MASK8:.+]]: vector<8xi1>, %[[F:.+]]: vector<8xf32>)
// CHECK: %[[BITS:.+]] = llvm.bitcast %[[V]] : vector<16xbf16> to vector<16xi16>
// CHECK: llvm.intr.masked.store %[[BITS]], %[[P]], %[[MASK]] {alignment = 2 : i32} : vector<16xi16>, vector<16xi1> into !llvm.ptr
// CHECK: %[[PASS:.+]] = llvm.bitcast %[[H]] : vector<8xf16> to vector<8xi16>
// CHECK: %[[LOADED:.+]] = llvm.intr.masked.load %[[P]], %[[MASK8]], %[[PASS]] {alignment = 2 : i32} : (!llvm.ptr, vector<8xi1>, vector<8xi16>) -> vector<8xi16>
// CHECK: %[[HALF:.+]] = llvm.bitcast %[[LOADED]] : vector<8xi16> to vector<8xf16>
// CHECK: %[[NOPASS:.+]] = llvm.intr.masked.load %[[P]], %[[MASK]] {alignment = 2 : i32} : (!llvm.ptr, vector<16xi1>) -> vector<16xi16>
// CHECK: %[[BF:.+]] = llvm.bitcast %[[NOPASS]] : vector<16xi16> to vector<16xbf16>
// CHECK: llvm.intr.masked.store %[[F]], %[[P]], %[[MASK8]] {alignment = 4 : i32} : vector<8xf32>, vector<8xi1> into !llvm.ptr
// CHECK: llvm.insertvalue %[[HALF]]
// CHECK: llvm.insertvalue %[[BF]]
llvm.func @partial_tiles(%p: !llvm.ptr, %mask: vector<16xi1>, %v: vector<16xbf16>, %h: vector<8xf16>, %mask8: vector<8xi1>, %f: vector<8xf32>) -> !llvm.struct<(vector<8xf16>, vector<16xbf16>)> {
  llvm.intr.masked.store %v, %p, %mask {alignment = 2 : i32} : vector<16xbf16>, vector<16xi1> into !llvm.ptr
  %half = llvm.intr.masked.load %p, %mask8, %h {alignment = 2 : i32} : (!llvm.ptr, vector<8xi1>, vector<8xf16>) -> vector<8xf16>
  %bf = llvm.intr.masked.load %p, %mask {alignment = 2 : i32} : (!llvm.ptr, vector<16xi1>) -> vector<16xbf16>
  llvm.intr.masked.store %f, %p, %mask8 {alignment = 4 : i32} : vector<8xf32>, vector<8xi1> into !llvm.ptr
  %u = llvm.mlir.undef : !llvm.struct<(vector<8xf16>, vector<16xbf16>)>
  %r0 = llvm.insertvalue %half, %u[0] : !llvm.struct<(vector<8xf16>, vector<16xbf16>)>
  %r1 = llvm.insertvalue %bf, %r0[1] : !llvm.struct<(vector<8xf16>, vector<16xbf16>)>
  llvm.return %r1 : !llvm.struct<(vector<8xf16>, vector<16xbf16>)>
}
