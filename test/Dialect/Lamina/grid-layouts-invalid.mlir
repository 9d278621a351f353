// RUN: lamina-opt %s --lamina-check-layouts --split-input-file -verify-diagnostics

// Layouts over a grid of several axes: what the spelling, the module's grid
// and each axis's rules reject.

module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{grid axis 'tp' is named twice}}
  func.func @twice(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[tp: S(0), tp: R]>}) {
    return
  }
}

// -----

module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{a grid layout names at least one axis}}
  func.func @empty(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[]>}) {
    return
  }
}

// -----

module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{unknown layout 'Q', expected R, S(axis) or P}}
  func.func @unknown(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: Q]>}) {
    return
  }
}

// -----

module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{tensor dim 0 is sharded on grid axes 'dp' and 'tp'; a dim is sharded on one axis at most}}
  func.func @one_dim_two_axes(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0), tp: S(0)]>}) {
    return
  }
}

// -----

// A typo in an axis name is no new axis.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{argument 0 has a layout on grid axis 'pd', but the axes of the module's 'lamina.grid' are 'dp', 'tp'}}
  func.func @unknown_axis(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[pd: S(0)]>}) {
    return
  }
}

// -----

module attributes {lamina.world_size = 2 : i64} {
  // expected-error @+1 {{argument 0 has a layout on grid axis 'dp', but the module's grid has the one axis 'tp' (declare more with 'lamina.grid')}}
  func.func @no_grid(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>}) {
    return
  }
}

// -----

module attributes {lamina.grid = {dp = 4, tp = 2}} {
  // expected-error @+1 {{argument 0 is sharded on axis 0 of size 6, which is not divisible by the size 4 of grid axis 'dp'}}
  func.func @indivisible(%x: tensor<6x16xf32> {lamina.layout = #lamina.layout<[dp: S(0), tp: S(1)]>}) {
    return
  }
}

// -----

module attributes {lamina.grid = {dp = 2, tp = 2}} {
  // expected-error @+1 {{argument 0 is sharded on axis 2 but has rank 2}}
  func.func @beyond_rank(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(2)]>}) {
    return
  }
}

// -----

// expected-error @+1 {{'lamina.grid' is a module attribute naming grid axes and their positive sizes}}
module attributes {lamina.grid = {dp = 0, tp = 2}} {
}

// -----

// expected-error @+1 {{'lamina.grid' {dp = 2 : i64, tp = 2 : i64} has 4 ranks, but 'lamina.world_size' is 2}}
module attributes {lamina.grid = {dp = 2, tp = 2}, lamina.world_size = 2 : i64} {
}

// -----

module {
  // expected-error @+1 {{'lamina.grid' is a module attribute naming grid axes and their positive sizes}}
  func.func @on_a_function() attributes {lamina.grid = {dp = 2}} {
    return
  }
}

// -----

// Each axis's rules reject on their own, and the error names the axis: the
// batch is sharded over `dp`, so a softmax across the batch needs it whole.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @softmax_across_replicas(
      %x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0), tp: S(1)]>})
      -> tensor<8x16xf32> {
    // expected-error @+1 {{'lamina.softmax' op normalizes along the sharded axis 0; all_gather the value first (on grid axis 'dp')}}
    %0 = lamina.softmax %x dim 0 : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}

// -----

// On `tp`, fc2's partial sums reach its bias (no all-reduce between them),
// whatever the batch does over `dp`.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @bias_on_partial_sums(
      %x: tensor<8x32xf32> {lamina.layout = #lamina.layout<[dp: S(0), tp: S(1)]>},
      %w: tensor<16x32xf32> {lamina.layout = #lamina.layout<S(1)>},
      %b: tensor<16xf32>) -> tensor<8x16xf32> {
    %y = lamina.matmul "fc2" %x, %w : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
    // expected-error @+1 {{'lamina.bias_add' op adds its bias to partial sums (layout P) of layer 'fc2': every rank would add it once more (Slapo's double-bias bug); add a fwd_post all_reduce sync between the matmul and the bias (on grid axis 'tp')}}
    %o = lamina.bias_add "fc2" %y, %b : tensor<8x16xf32>, tensor<16xf32>
    return %o : tensor<8x16xf32>
  }
}

// -----

// A replica reduction sums terms, not blocks.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @sum_of_blocks(
      %x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>})
      -> tensor<8x16xf32> {
    // expected-error @+1 {{'lamina.reduce_replicas' op sums the replicas of a value sharded over them (layout #lamina.layout<S(0)>): each replica holds a different block, not a term of the sum (on grid axis 'dp')}}
    %g = lamina.reduce_replicas %x mean : tensor<8x16xf32>
    return %g : tensor<8x16xf32>
  }
}

// -----

// Each axis's rule alone would let a block of x over `dp` join a block of y
// over `tp` on the same dim; together they would shard dim 0 twice.
module attributes {lamina.grid = {dp = 2, tp = 2}} {
  func.func @one_dim_from_two_axes(
      %x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0)]>},
      %y: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(0)>})
      -> tensor<8x16xf32> {
    // expected-error @+1 {{'arith.addf' op would shard dim 0 of its result on grid axes 'dp' and 'tp' (its operands are sharded there on different axes); a dim is sharded on one axis at most}}
    %0 = arith.addf %x, %y : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
