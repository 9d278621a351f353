// lns.cmp results are i1 tensors; the CPU pipeline keeps i1 element-wise
// ops scalar (LLVM stores vector<Nxi1> as packed bits, a memref of i1 one
// byte per element), so a 64-element comparison reads back element by
// element as NumPy computes it.
// RUN: %python -c "import numpy as n; r = n.random.default_rng(5); x = r.integers(-40, 40, 64); y = n.where(r.random(64) < 0.5, x, r.integers(-40, 40, 64)); [n.save('%t.' + k + '.npy', v) for k, v in (('x', x), ('y', y), ('ref', (x == y).astype(n.int32)))]"
// RUN: lamina-run %s --input=%t.x.npy --input=%t.y.npy --reference=%t.ref.npy --rtol=0 --atol=0 | FileCheck %s
// CHECK: result 0 vs reference: max abs err 0, max rel err 0, 0/64 beyond atol 0 + rtol 0: ok

func.func @main(%x: tensor<64x!lns.num<f = 10>>, %y: tensor<64x!lns.num<f = 10>>) -> tensor<64xi32> {
  %0 = lns.cmp eq, %x, %y : tensor<64x!lns.num<f = 10>>, tensor<64x!lns.num<f = 10>> -> tensor<64xi1>
  %1 = arith.extui %0 : tensor<64xi1> to tensor<64xi32>
  return %1 : tensor<64xi32>
}
