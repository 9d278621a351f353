// RUN: lamina-opt %s -split-input-file "--convert-lamina-to-gpu=lns-sbdb=table" | FileCheck %s

// f = 10: 2 × 21 563 interleaved entries (168 KiB) stay in global memory; no
// pow or log is left.

// CHECK:       memref.global "private" constant @lamina_sbdb_table_f10 : memref<43126xi32> = dense<
// CHECK-LABEL: func.func @f10(
// CHECK:       gpu.launch
// CHECK-NOT:     memref.global
// CHECK:         %[[T:.+]] = memref.get_global @lamina_sbdb_table_f10 : memref<43126xi32>
// CHECK-NOT:     gpu.barrier
// CHECK:         scf.for
// CHECK:           memref.load %[[T]][%{{.+}}] : memref<43126xi32>
// CHECK-NOT:     math.powf
// CHECK:         memref.store

func.func @f10(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>> {
  %y = lamina.fused_linear "fc" %x, %w : (tensor<4x8x!lns.num<f = 10>>, tensor<16x8x!lns.num<f = 10>>) -> tensor<4x16x!lns.num<f = 10>>
  return %y : tensor<4x16x!lns.num<f = 10>>
}

// -----

// f = 8 fits in shared memory: each block copies the table (256 threads,
// stride 256), waits, then reads the copy.

// CHECK-LABEL: func.func @f8(
// CHECK:       gpu.launch
// CHECK:         %[[G:.+]] = memref.get_global @lamina_sbdb_table_f8 : memref<[[N:[0-9]+]]xi32>
// CHECK:         %[[S:.+]] = memref.get_global @lamina_sbdb_table_shared_[[N]] : memref<[[N]]xi32, 3>
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %c[[N]]{{(_[0-9]+)?}} step %c256
// CHECK:           %[[V:.+]] = memref.load %[[G]][%[[I]]]
// CHECK:           memref.store %[[V]], %[[S]][%[[I]]]
// CHECK:         gpu.barrier
// CHECK:         scf.if
// CHECK:           scf.for
// CHECK:             memref.load %[[S]][%{{.+}}] : memref<[[N]]xi32, 3>

func.func @f8(%x: tensor<4x8x!lns.num<f = 8>>, %w: tensor<16x8x!lns.num<f = 8>>) -> tensor<4x16x!lns.num<f = 8>> {
  %y = lamina.fused_linear "fc" %x, %w : (tensor<4x8x!lns.num<f = 8>>, tensor<16x8x!lns.num<f = 8>>) -> tensor<4x16x!lns.num<f = 8>>
  return %y : tensor<4x16x!lns.num<f = 8>>
}
