// RUN: lamina-opt %s --convert-shard-to-lamina-mpi --split-input-file -verify-diagnostics

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @all_to_all(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{is a collective Lamina does not lower to MPI (all_reduce, all_gather, reduce_scatter, all_slice and process_linear_index are)}}
  %0 = shard.all_to_all %x on @lamina_grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @min(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{reduces with 'min'; Lamina's MPI runtime all-reduces sums and maxima only}}
  %0 = shard.all_reduce %x on @lamina_grid grid_axes = [0] reduction = min : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @max_scatter(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{reduces with 'max'; Lamina's MPI runtime reduce-scatters sums only}}
  %0 = shard.reduce_scatter %x on @lamina_grid grid_axes = [0] reduction = max scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @widening(%x: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{changes the element type; Lamina's MPI runtime reduces in the operand's type}}
  %0 = shard.all_reduce %x on @lamina_grid grid_axes = [0] : tensor<4x8xf16> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @i8(%x: tensor<4x4xi8>) -> tensor<4x8xi8> {
  // expected-error @+1 {{has an element type Lamina's MPI runtime does not communicate}}
  %0 = shard.all_gather %x on @lamina_grid grid_axes = [0] gather_axis = 1 : tensor<4x4xi8> -> tensor<4x8xi8>
  return %0 : tensor<4x8xi8>
}

// -----

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{needs a statically shaped tensor operand}}
  %0 = shard.all_reduce %x on @lamina_grid grid_axes = [0] : tensor<?x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @reduce_replicas_dynamic(%g: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'lamina.reduce_replicas' op needs a statically shaped tensor operand}}
  %r = lamina.reduce_replicas %g mean : tensor<?xf32>
  return %r : tensor<?xf32>
}
