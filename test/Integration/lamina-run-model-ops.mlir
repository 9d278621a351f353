// lamina-run of an embedding, a masked fill and the cross-entropy loss,
// forward and backward, checked against eager PyTorch (F.embedding,
// masked_fill, F.cross_entropy with ignore_index, autograd).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as n; r = n.random.default_rng(0); t = r.integers(0, 7, (10,)); t[3] = -1; [n.save('%t/' + k + '.npy', v) for k, v in (('idx', r.integers(0, 7, (2, 5))), ('w', r.standard_normal((7, 4)).astype(n.float32)), ('t', t), ('p', r.standard_normal((4, 7)).astype(n.float32)), ('one', n.array(1.0, dtype=n.float32)))]"
// RUN: lamina-run %s --input=%t/idx.npy --input=%t/w.npy --input=%t/t.npy --input=%t/p.npy --output-dir=%t/fwd | FileCheck %s --check-prefix=FWD
// RUN: lamina-run %s --backward --input=%t/idx.npy --input=%t/w.npy --input=%t/t.npy --input=%t/p.npy --cotangent=%t/one.npy --output-dir=%t/bwd | FileCheck %s --check-prefix=BWD
// RUN: %python %S/Inputs/check_model_ops.py %t

// FWD: result 0: f32[]
// BWD: results: the gradients of arguments 1, 3
// BWD-NEXT: result 0: f32[7, 4]
// BWD-NEXT: result 1: f32[4, 7]

func.func @main(%idx: tensor<2x5xi64>, %w: tensor<7x4xf32>, %t: tensor<10xi64>, %p: tensor<4x7xf32>) -> tensor<f32> {
  %e = lamina.embedding "wte" %idx, %w : (tensor<2x5xi64>, tensor<7x4xf32>) -> tensor<2x5x4xf32>
  // Positions 1 and 3 of each row masked: bits 1 and 3 of 0x0A.
  %mask = arith.constant dense<"0x0A"> : tensor<1x5x1xi1>
  %m = lamina.masked_fill %e, %mask value -2.5 : tensor<2x5x4xf32>, tensor<1x5x1xi1>
  %z = arith.constant dense<0.0> : tensor<10x7xf32>
  %rows = tensor.collapse_shape %m [[0, 1], [2]] : tensor<2x5x4xf32> into tensor<10x4xf32>
  %logits = linalg.matmul ins(%rows, %p : tensor<10x4xf32>, tensor<4x7xf32>) outs(%z : tensor<10x7xf32>) -> tensor<10x7xf32>
  %loss = lamina.cross_entropy %logits, %t ignore_index -1 : (tensor<10x7xf32>, tensor<10xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
