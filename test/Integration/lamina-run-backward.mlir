// lamina-run --backward: a training step of a layer, its gradients checked
// against the formulas by hand in NumPy (h = x·Wᵀ + b, y = relu(h):
// dh = dy·[h > 0], dx = dh·W, dW = dhᵀ·x, db = Σ_rows dh).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as n; r = n.random.default_rng(0); [n.save('%t/' + k + '.npy', r.standard_normal(s).astype(n.float32)) for k, s in (('x', (4, 8)), ('w', (16, 8)), ('b', (16,)), ('dy', (4, 16)))]"
// RUN: lamina-run %s --backward --input=%t/x.npy --input=%t/w.npy --input=%t/b.npy --cotangent=%t/dy.npy --output-dir=%t/out | FileCheck %s --check-prefix=OUT
// RUN: %python -c "import numpy as n; L = lambda k: n.load('%t/' + k + '.npy'); x, w, b, dy = L('x'), L('w'), L('b'), L('dy'); dh = dy * (x @ w.T + b > 0); g = [n.load('%t/out/result%%d.npy' %% i) for i in range(3)]; [n.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5) for a, e in zip(g, (dh @ w, dh.T @ x, dh.sum(0)))]"
// Seeded cotangents without --cotangent.
// RUN: lamina-run %s --backward --random-inputs | FileCheck %s --check-prefix=OUT

// RUN: not lamina-run %s --cotangent=%t/dy.npy --random-inputs 2>&1 | FileCheck %s --check-prefix=NOTBACKWARD
// RUN: not lamina-run %s --backward --random-inputs --cotangent=%t/dy.npy --cotangent=%t/dy.npy 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not lamina-run %s --backward --input=%t/x.npy --input=%t/w.npy --input=%t/b.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// The pair builds for the GPU like any program (f32 layers have no
// tensor-core kernel; lamina-run-cuda-backward.mlir runs a bf16 one).
// RUN: not lamina-run %s --backward --target=cuda --random-inputs 2>&1 | FileCheck %s --check-prefix=CUDA

// OUT: results: the gradients of arguments 0, 1, 2
// OUT-NEXT: result 0: f32[4, 8]
// OUT-NEXT: result 1: f32[16, 8]
// OUT-NEXT: result 2: f32[16]
// NOTBACKWARD: lamina-run: error: --cotangent is for --backward
// TOOMANY: lamina-run: error: @main has 1 results, 2 --cotangent given
// MISSING: lamina-run: error: @main has 1 results, 0 --cotangent given (add --cotangent, or --random-inputs)
// CUDA: error: 'lamina.fused_linear' op tensor-core kernels take bf16 or f16 inputs and weights of one type; got 'f32' and 'f32'
// CUDA: lamina-run: error: lamina-gpu-pipeline failed (diagnostics above)

func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
