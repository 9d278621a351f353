// RUN: lamina-opt %s --convert-shard-to-lamina-mpi --split-input-file -verify-diagnostics

shard.grid @lamina_grid(shape = 2) {sym_visibility = "private"}
func.func @all_to_all(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{is a collective Lamina does not lower to MPI (all_reduce, all_gather, reduce_scatter, all_slice, process_linear_index and process_multi_index are)}}
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

// -----

module attributes {lamina.grid = {dp = 2 : i64, tp = 2 : i64}} {
  shard.grid @lamina_grid(shape = 2x2) {sym_visibility = "private"}
  func.func @two_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{acts on 2 grid axes; Lamina's MPI runtime communicates along one}}
    %0 = shard.all_reduce %x on @lamina_grid grid_axes = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.grid = {dp = 2 : i64, ep = 2 : i64}} {
  shard.grid @lamina_grid(shape = 2x2) {sym_visibility = "private"}
  func.func @unknown_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{acts on grid axis 'ep', which has no communicator in Lamina's MPI runtime (dp, pp and tp have)}}
    %0 = shard.all_reduce %x on @lamina_grid grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// A shard.grid of more axes than lamina.grid names.
module attributes {lamina.grid = {dp = 2 : i64, tp = 2 : i64}} {
  shard.grid @lamina_grid(shape = 2x2x1) {sym_visibility = "private"}
  func.func @past_the_grid(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{acts on grid axis 2, but the module's grid has 2 axes}}
    %0 = shard.all_reduce %x on @lamina_grid grid_axes = [2] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {lamina.grid = {dp = 2 : i64, tp = 2 : i64}} {
  shard.grid @lamina_grid(shape = 2x2) {sym_visibility = "private"}
  func.func @linear_index() -> index {
    // expected-error @+1 {{is the linear index of a grid of several axes; Lamina's MPI runtime answers ranks per axis (shard.process_multi_index)}}
    %0 = shard.process_linear_index on @lamina_grid : index
    return %0 : index
  }
}

// -----

// Without lamina.grid the grid is the world's one axis.
shard.grid @lamina_grid(shape = 2x2) {sym_visibility = "private"}
func.func @second_axis_of_one(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{acts on grid axis 1 of a one-axis grid}}
  %0 = shard.all_reduce %x on @lamina_grid grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
