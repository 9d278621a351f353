// An LNSLazyLinear from an IR file: lamina-run fixes the weight's
// in_features from the input (17) and runs the LNS layer; the result equals
// the NumPy implementation of the spec.
// RUN: %python -c "import sys; sys.path.insert(0, '%lamina_obj/python'); import numpy as n; from lamina import lns_numpy as l; r = n.random.default_rng(3); x = l.encode(r.standard_normal((4, 17)), 10); w = l.encode(r.standard_normal((8, 17)), 10); b = l.encode(r.standard_normal(8), 10); [n.save('%t.' + k + '.npy', v) for k, v in (('x', x), ('w', w), ('b', b), ('ref', l.linear(x, w, b, 10)))]"
// RUN: lamina-run %s --input=%t.x.npy --input=%t.w.npy --input=%t.b.npy --reference=%t.ref.npy --rtol=0 --atol=0 | FileCheck %s
// CHECK: result 0 vs reference: max abs err 0, max rel err 0, 0/32 beyond atol 0 + rtol 0: ok

func.func @main(%x: tensor<4x17x!lns.num<f = 10>>, %w: tensor<8x?x!lns.num<f = 10>>, %b: tensor<8x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>> {
  %0 = lamina.linear "lazy" %x, %w bias %b : (tensor<4x17x!lns.num<f = 10>>, tensor<8x?x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>>
  return %0 : tensor<4x8x!lns.num<f = 10>>
}
