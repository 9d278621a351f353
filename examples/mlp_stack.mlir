// Four linear layers with a residual connection from the first to the
// last, for pipelines of up to four stages:
//   mpirun.mpich -np 4 build/bin/lamina-run examples/mlp_stack.mlir --entry=stack \
//     --schedule=examples/pipeline_stack.schedule.mlir --random-inputs
module attributes {lamina.world_size = 4 : i64} {
  func.func @stack(%x: tensor<8x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<32x32xf32>,
                   %w2: tensor<32x32xf32>, %w3: tensor<32x32xf32>,
                   %b: tensor<32xf32>) -> tensor<8x32xf32> {
    %h0 = lamina.linear_act "l0" %x, %w0 bias %b activation gelu_tanh
        : (tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %h1 = lamina.linear_act "l1" %h0, %w1 bias %b activation relu
        : (tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %h2 = lamina.linear "l2" %h1, %w2 : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
    %r = arith.addf %h2, %h0 : tensor<8x32xf32>
    %h3 = lamina.linear "l3" %r, %w3 bias %b
        : (tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    return %h3 : tensor<8x32xf32>
  }
}
