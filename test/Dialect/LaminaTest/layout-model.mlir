// RUN: lamina-opt %s "--lamina-check-layouts=annotate=true" --split-input-file | FileCheck %s --check-prefix=FWD
// RUN: lamina-opt %s --lamina-check-gradient-layouts --split-input-file | FileCheck %s --check-prefix=GRAD
// RUN: lamina-opt %s --lamina-partition --split-input-file | FileCheck %s --check-prefix=PART

// An op of another dialect joins sharded programs through one external
// LayoutOpInterface model (test/lib/Dialect/Test): lamina_test.scale is
// linear, so its model passes the column-parallel S(1) and the row-parallel
// partial sums (P) through, which no op without a model may take
// (layout-model-invalid.mlir); the backward check transposes the layers
// around it, and the partitioner scales each rank's block.

// FWD-LABEL: func.func @megatron_mlp
// FWD: lamina_test.scale %{{.*}} by 2.000000e+00 {lamina.result_layouts = [#lamina.layout<S(1)>]} : tensor<4x16xf32>
// FWD: lamina_test.scale %{{.*}} by 5.000000e-01 {lamina.result_layouts = [#lamina.layout<P>]} : tensor<4x8xf32>
// FWD: lamina.sync "fc2" %{{.*}} <fwd_post, all_reduce> {lamina.backward = "identity", lamina.result_layouts = [#lamina.layout<R>]}

// GRAD-LABEL: func.func @megatron_mlp
// GRAD: lamina_test.scale

// PART-LABEL: func.func @megatron_mlp
// PART: %[[H:.+]] = lamina.matmul "fc1" %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// PART: %[[A:.+]] = lamina_test.scale %[[H]] by 2.000000e+00 : tensor<4x8xf32>
// PART: %[[P:.+]] = lamina.matmul "fc2" %[[A]], %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// PART: %[[Q:.+]] = lamina_test.scale %[[P]] by 5.000000e-01 : tensor<4x8xf32>
// PART: shard.all_reduce %[[Q]] on @lamina_grid
module attributes {lamina.world_size = 2 : i64} {
  func.func @megatron_mlp(%x: tensor<4x8xf32>,
      %w1: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
      %w2: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %s = lamina.sync "fc1" %x <bwd_post, all_reduce> : tensor<4x8xf32>
    %h = lamina.matmul "fc1" %s, %w1 : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %a = lamina_test.scale %h by 2.0 : tensor<4x16xf32>
    %p = lamina.matmul "fc2" %a, %w2 : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %q = lamina_test.scale %p by 0.5 : tensor<4x8xf32>
    %y = lamina.sync "fc2" %q <fwd_post, all_reduce> : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
