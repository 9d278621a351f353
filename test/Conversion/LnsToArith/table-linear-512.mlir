// RUN: lamina-opt %s --convert-lns-to-arith=vector-bits=512 | FileCheck %s
// RUN: lamina-opt %s --lamina-cpu-pipeline=vector-bits=512 -o /dev/null

// With 512-bit vectors the table-mode linear kernel takes 16 i32 lanes per
// vector: W is packed into panels of 2 vectors ([N/32, K, 32]), the tile of
// 4 rows × 2 vectors keeps 8 accumulators of 16 lanes, and each addition
// gathers 16 table entries; the i64 fallback runs on 8 lanes.
// CHECK-LABEL: func.func @table_linear
// CHECK: %[[WP:.+]] = linalg.transpose {{.*}} outs(%{{.*}} : tensor<2x64x32xi32>) permutation = [1, 0, 2]
// CHECK: scf.for {{.*}} -> (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>)
// CHECK: vector.transfer_read %[[WP]]{{.*}} : tensor<2x64x32xi32>, vector<16xi32>
// CHECK: vector.gather {{.*}} : tensor<43128xi32>, vector<16xi32>, vector<16xi1>, vector<16xi32> into vector<16xi32>
// CHECK: } else {
// CHECK: scf.for {{.*}} -> (vector<8xi64>, vector<8xi64>, vector<8xi64>, vector<8xi64>, vector<8xi64>, vector<8xi64>, vector<8xi64>, vector<8xi64>)
// CHECK: vector.gather {{.*}} : tensor<43126xi32>, vector<8xi32>
func.func @table_linear(%x: tensor<4x64x!lns.num<f = 10>>, %w: tensor<64x64x!lns.num<f = 10>>) -> tensor<4x64x!lns.num<f = 10>> {
  %0 = lns.linear %x, %w sbdb table : tensor<4x64x!lns.num<f = 10>>, tensor<64x64x!lns.num<f = 10>> -> tensor<4x64x!lns.num<f = 10>>
  return %0 : tensor<4x64x!lns.num<f = 10>>
}
