// RUN: lamina-opt %s --lamina-cpu-prefetch-rows --split-input-file | FileCheck %s

// A marked loop streaming two blocks of a packed weight: every whole-row
// read at k or k + 1 gets a prefetch of the row 4096 bytes (64 rows of 64
// bytes) ahead, clamped to the last row; the mark goes away.
// CHECK-LABEL: func.func @streamed
// CHECK-SAME: (%[[W:.+]]: memref<4x4096x16xf32>, %[[N:.+]]: index,
// CHECK: scf.for %[[K:.+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[AHEAD:.+]] = arith.constant 64 : index
// CHECK: %[[R0:.+]] = arith.addi %[[K]], %[[AHEAD]] : index
// CHECK: %[[LAST:.+]] = arith.constant 4095 : index
// CHECK: %[[C0:.+]] = arith.minui %[[R0]], %[[LAST]] : index
// CHECK: memref.prefetch %[[W]][%[[N]], %[[C0]], %{{.*}}], read, locality<3>, data : memref<4x4096x16xf32>
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K]], %{{.*}}]
// CHECK: %[[K1:.+]] = arith.addi %[[K]], %{{.*}} : index
// CHECK: %[[R1:.+]] = arith.addi %[[K1]], %{{.*}} : index
// CHECK: %[[C1:.+]] = arith.minui %[[R1]], %{{.*}} : index
// CHECK: memref.prefetch %[[W]][%[[N]], %[[C1]], %{{.*}}]
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K1]], %{{.*}}]
// CHECK-NOT: memref.prefetch
// CHECK: }
// CHECK-NOT: lamina.prefetch_rows
func.func @streamed(%w: memref<4x4096x16xf32>, %n: index, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4096 = arith.constant 4096 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c4096 step %c2 {
    %a = vector.transfer_read %w[%n, %k, %c0], %pad {in_bounds = [true]} : memref<4x4096x16xf32>, vector<16xf32>
    %k1 = arith.addi %k, %c1 : index
    %b = vector.transfer_read %w[%n, %k1, %c0], %pad {in_bounds = [true]} : memref<4x4096x16xf32>, vector<16xf32>
    %s = arith.addf %a, %b : vector<16xf32>
    vector.transfer_write %s, %out[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
  } {lamina.prefetch_rows = 4096 : i64}
  return
}

// -----

// A loop over one chunk of k: rows at chunk + k (the chunk's start defined
// outside the loop) and at that plus 1 are streamed too, each prefetched
// 64 rows ahead of its own index.
// CHECK-LABEL: func.func @chunk
// CHECK-SAME: (%[[W:.+]]: memref<4x4096x16xf32>, %[[N:.+]]: index, %[[START:.+]]: index,
// CHECK: scf.for %[[K:.+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[AT:.+]] = arith.addi %[[START]], %[[K]] : index
// CHECK: %[[R0:.+]] = arith.addi %[[AT]], %{{.*}} : index
// CHECK: %[[C0:.+]] = arith.minui %[[R0]], %{{.*}} : index
// CHECK: memref.prefetch %[[W]][%[[N]], %[[C0]], %{{.*}}]
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[AT]], %{{.*}}]
// CHECK: %[[AT1:.+]] = arith.addi %[[AT]], %{{.*}} : index
// CHECK: %[[R1:.+]] = arith.addi %[[AT1]], %{{.*}} : index
// CHECK: %[[C1:.+]] = arith.minui %[[R1]], %{{.*}} : index
// CHECK: memref.prefetch %[[W]][%[[N]], %[[C1]], %{{.*}}]
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[AT1]], %{{.*}}]
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @chunk(%w: memref<4x4096x16xf32>, %n: index, %start: index, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c1024 = arith.constant 1024 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c1024 step %c2 {
    %at = arith.addi %start, %k : index
    %a = vector.transfer_read %w[%n, %at, %c0], %pad {in_bounds = [true]} : memref<4x4096x16xf32>, vector<16xf32>
    %at1 = arith.addi %at, %c1 : index
    %b = vector.transfer_read %w[%n, %at1, %c0], %pad {in_bounds = [true]} : memref<4x4096x16xf32>, vector<16xf32>
    %s = arith.addf %a, %b : vector<16xf32>
    vector.transfer_write %s, %out[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
  } {lamina.prefetch_rows = 4096 : i64}
  return
}

// -----

// Reads that do not stream whole rows along the loop get nothing: part of a
// row, a row index that does not follow the loop (a fixed one, or k plus a
// value that changes with k), rows of less than a cache line; nor does an
// unmarked loop.
// CHECK-LABEL: func.func @not_streamed
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @not_streamed(%w: memref<64x32xf32>, %x: memref<64x8xf32>, %i: index, %out: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c64 step %c1 {
    %part = vector.transfer_read %w[%k, %c0], %pad {in_bounds = [true]} : memref<64x32xf32>, vector<16xf32>
    %fixed = vector.transfer_read %w[%i, %c0], %pad {in_bounds = [true]} : memref<64x32xf32>, vector<32xf32>
    %short = vector.transfer_read %x[%k, %c0], %pad {in_bounds = [true]} : memref<64x8xf32>, vector<8xf32>
    %twice = arith.addi %k, %k : index
    %varying = vector.transfer_read %w[%twice, %c0], %pad {in_bounds = [true]} : memref<64x32xf32>, vector<32xf32>
    vector.transfer_write %varying, %out[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
    vector.transfer_write %part, %out[%c0] {in_bounds = [true]} : vector<16xf32>, memref<32xf32>
    vector.transfer_write %fixed, %out[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
    vector.transfer_write %short, %out[%c0] {in_bounds = [true]} : vector<8xf32>, memref<32xf32>
  } {lamina.prefetch_rows = 4096 : i64}
  scf.for %k = %c0 to %c64 step %c1 {
    %row = vector.transfer_read %w[%k, %c0], %pad {in_bounds = [true]} : memref<64x32xf32>, vector<32xf32>
    vector.transfer_write %row, %out[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
  }
  return
}
