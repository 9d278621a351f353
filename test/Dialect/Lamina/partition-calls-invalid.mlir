// RUN: lamina-opt %s --lamina-partition -split-input-file -verify-diagnostics

// A called function is partitioned once: its calls must pass the same
// layouts.
module attributes {lamina.world_size = 2 : i64} {
  func.func @two_layouts(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>},
                         %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    // expected-note @+1 {{the earlier call}}
    %a = func.call @square(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'func.call' op passes argument 0 with layout #lamina.layout<R> to @square, which an earlier call passes with #lamina.layout<S(0)>; a called function is partitioned once, for one layout of its arguments}}
    %b = func.call @square(%y) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.func private @square(%v: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = arith.mulf %v, %v : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// A called function that declares its argument's layout gets it.
module attributes {lamina.world_size = 2 : i64} {
  func.func @declared(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'func.call' op passes argument 0 with layout #lamina.layout<R> to @square, which declares it #lamina.layout<S(0)>}}
    %a = func.call @square(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %a : tensor<4x8xf32>
  }
  func.func private @square(%v: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    %0 = arith.mulf %v, %v : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// Layouts are inferred once per called function, without recursion.
module attributes {lamina.world_size = 2 : i64} {
  func.func @recursive(%x: tensor<4x8xf32> {lamina.layout = #lamina.layout<S(0)>}) -> tensor<4x8xf32> {
    %a = func.call @again(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %a : tensor<4x8xf32>
  }
  func.func private @again(%v: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'func.call' op calls @again from inside itself; a called function's layouts are inferred once, without recursion}}
    %0 = func.call @again(%v) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// The called function is checked with the layouts its call passes: a
// row-parallel matmul on the S(1) value it receives leaves partial sums,
// which it must not return.
module attributes {lamina.world_size = 2 : i64} {
  func.func @partial_block(%x: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
      %w: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) -> tensor<4x8xf32> {
    %a = func.call @fc2_block(%x, %w) : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    return %a : tensor<4x8xf32>
  }
  func.func private @fc2_block(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
    %0 = lamina.matmul "h.0.fc2" %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{'func.return' op returns partial sums (layout P) as result 0; add a fwd_post all_reduce sync before returning}}
    return %0 : tensor<4x8xf32>
  }
}
