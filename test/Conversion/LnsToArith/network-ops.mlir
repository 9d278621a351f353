// RUN: lamina-opt %s --convert-lns-to-arith | FileCheck %s

// convert-lns-to-arith on the element-wise network ops, scalar codes of
// !lns.num<f = 10> (base 2^(2^-10) = 1.0006771306930664, log base
// 6.7690154351562274E-4; Z = -9007199254740991):
//   exp       trunc(c_e · decode(x)) & -2, c_e the code of float32 e:
//             2·round(ln(2.7182817459106445) / (ln 2 · 2^-10))
//             = 2·round(1477.3197) = 2954; the product clamped to ±2^53
//             (0x4340000000000000 = 9.007199254740992E+15) before fptosi.
//   log, tanh, sigmoid   encode(f(decode(x))) in f64; sigmoid is
//             1 / (1 + exp(-x)).
//   leaky_relu       (x & 1) ? mul(x, slope) : x
//   leaky_relu_grad  mul(g, (x & 1) || isZero(x) ? slope : c1)
// decode(x) is ±b^(x >> 1) by math.powf, 0.0 for Z (the last f64 select
// before the function); encode rounds log|v| / log b to even.

!f = !lns.num<f = 10>

// CHECK-LABEL: func.func @exp
// CHECK-SAME: (%[[X:.+]]: i64) -> i64
// CHECK: %[[CE:.+]] = arith.constant 2.954000e+03 : f64
// CHECK: %[[HALF:.+]] = arith.shrsi %[[X]], %{{.+}} : i64
// CHECK: %[[EXPO:.+]] = arith.sitofp %[[HALF]] : i64 to f64
// CHECK: %[[BASE:.+]] = arith.constant 1.0006771306930664 : f64
// CHECK: %[[MAG:.+]] = math.powf %[[BASE]], %[[EXPO]] : f64
// CHECK: %[[ISZ:.+]] = arith.cmpi eq, %{{.+}}, %c-9007199254740991_i64 : i64
// CHECK: %[[DEC:.+]] = arith.select %[[ISZ]], %{{.+}}, %{{.+}} : f64
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[CE]], %[[DEC]] : f64
// CHECK-NEXT: %[[LO:.+]] = arith.constant 0xC340000000000000 : f64
// CHECK-NEXT: %[[P1:.+]] = arith.maximumf %[[P]], %[[LO]] : f64
// CHECK-NEXT: %[[HI:.+]] = arith.constant 0x4340000000000000 : f64
// CHECK-NEXT: %[[P2:.+]] = arith.minimumf %[[P1]], %[[HI]] : f64
// CHECK-NEXT: %[[T:.+]] = arith.fptosi %[[P2]] : f64 to i64
// CHECK-NEXT: %[[M2:.+]] = arith.constant -2 : i64
// CHECK-NEXT: %[[Y:.+]] = arith.andi %[[T]], %[[M2]] : i64
// CHECK-NEXT: return %[[Y]] : i64
// CHECK-NOT: lns.
func.func @exp(%x: !f) -> !f {
  %0 = lns.exp %x : !f
  return %0 : !f
}

// CHECK-LABEL: func.func @tanh
// CHECK: math.powf
// CHECK: %[[ISZ:.+]] = arith.cmpi eq, %{{.+}}, %c-9007199254740991_i64 : i64
// CHECK: %[[DEC:.+]] = arith.select %[[ISZ]], %{{.+}}, %{{.+}} : f64
// CHECK-NEXT: %[[V:.+]] = math.tanh %[[DEC]] : f64
// CHECK-NEXT: math.absf %[[V]] : f64
// CHECK: math.log
// CHECK: arith.divf %{{.+}}, %{{.+}} : f64
// CHECK: math.roundeven
// CHECK: arith.fptosi
// CHECK: return %{{.+}} : i64
func.func @tanh(%x: !f) -> !f {
  %0 = lns.tanh %x : !f
  return %0 : !f
}

// CHECK-LABEL: func.func @sigmoid
// CHECK: math.powf
// CHECK: %[[ISZ:.+]] = arith.cmpi eq, %{{.+}}, %c-9007199254740991_i64 : i64
// CHECK: %[[DEC:.+]] = arith.select %[[ISZ]], %{{.+}}, %{{.+}} : f64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.000000e+00 : f64
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[DEC]] : f64
// CHECK-NEXT: %[[E:.+]] = math.exp %[[NEG]] : f64
// CHECK-NEXT: %[[DEN:.+]] = arith.addf %[[ONE]], %[[E]] : f64
// CHECK-NEXT: %[[V:.+]] = arith.divf %[[ONE]], %[[DEN]] : f64
// CHECK-NEXT: math.absf %[[V]] : f64
// CHECK: math.log
// CHECK: math.roundeven
// CHECK: return %{{.+}} : i64
func.func @sigmoid(%x: !f) -> !f {
  %0 = lns.sigmoid %x : !f
  return %0 : !f
}

// log: the function's math.log, then encode's of |log x|.
// CHECK-LABEL: func.func @log
// CHECK: math.powf
// CHECK: %[[ISZ:.+]] = arith.cmpi eq, %{{.+}}, %c-9007199254740991_i64 : i64
// CHECK: %[[DEC:.+]] = arith.select %[[ISZ]], %{{.+}}, %{{.+}} : f64
// CHECK-NEXT: %[[V:.+]] = math.log %[[DEC]] : f64
// CHECK-NEXT: %[[A:.+]] = math.absf %[[V]] : f64
// CHECK: math.log
// CHECK: arith.constant 6.7690154351562274E-4 : f64
// CHECK: math.roundeven
// CHECK: return %{{.+}} : i64
func.func @log(%x: !f) -> !f {
  %0 = lns.log %x : !f
  return %0 : !f
}

// leaky_relu: the sign bit of x selects mul(x, slope) (integer code
// arithmetic with the zero rule) or x itself.
// CHECK-LABEL: func.func @leaky_relu
// CHECK-SAME: (%[[X:[^:]+]]: i64, %[[S:[^:]+]]: i64) -> i64
// CHECK: %[[BIT:.+]] = arith.andi %[[X]], %{{.+}} : i64
// CHECK: %[[NEG:.+]] = arith.cmpi ne, %[[BIT]], %{{.+}} : i64
// CHECK: %[[SUM:.+]] = arith.addi %[[X]], %[[S]] : i64
// CHECK: %[[PROD:.+]] = arith.select %{{.+}}, %c-9007199254740991_i64{{.*}}, %{{.+}} : i64
// CHECK-NEXT: %[[Y:.+]] = arith.select %[[NEG]], %[[PROD]], %[[X]] : i64
// CHECK-NEXT: return %[[Y]] : i64
// CHECK-NOT: math.
func.func @leaky_relu(%x: !f, %s: !f) -> !f {
  %0 = lns.leaky_relu %x, %s : !f
  return %0 : !f
}

// leaky_relu_grad: slope where x is negative or Z, else c1 (code 0),
// multiplied into g.
// CHECK-LABEL: func.func @leaky_relu_grad
// CHECK-SAME: (%[[G:[^:]+]]: i64, %[[X:[^:]+]]: i64, %[[S:[^:]+]]: i64) -> i64
// CHECK: %[[BIT:.+]] = arith.andi %[[X]], %{{.+}} : i64
// CHECK: %[[NEG:.+]] = arith.cmpi ne, %[[BIT]], %{{.+}} : i64
// CHECK: %[[XO:.+]] = arith.ori %[[X]], %{{.+}} : i64
// CHECK-NEXT: %[[ZC:.+]] = arith.constant -9007199254740991 : i64
// CHECK-NEXT: %[[XZ:.+]] = arith.cmpi eq, %[[XO]], %[[ZC]] : i64
// CHECK-NEXT: %[[LEAKY:.+]] = arith.ori %[[NEG]], %[[XZ]] : i1
// CHECK-NEXT: %[[C1:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[F:.+]] = arith.select %[[LEAKY]], %[[S]], %[[C1]] : i64
// CHECK: arith.addi %[[G]], %[[F]] : i64
// CHECK: return %{{.+}} : i64
func.func @leaky_relu_grad(%g: !f, %x: !f, %s: !f) -> !f {
  %0 = lns.leaky_relu_grad %g, %x, %s : !f
  return %0 : !f
}

// A tensor operand: the same scalar code in a linalg.generic on i64.
// CHECK-LABEL: func.func @exp_tensor
// CHECK-SAME: (%{{.+}}: tensor<4xi64>) -> tensor<4xi64>
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<4xi64>) outs(%{{.+}} : tensor<4xi64>)
// CHECK: arith.constant 2.954000e+03 : f64
// CHECK: math.powf
// CHECK: arith.minimumf
// CHECK: arith.fptosi
// CHECK: linalg.yield %{{.+}} : i64
func.func @exp_tensor(%x: tensor<4x!f>) -> tensor<4x!f> {
  %0 = lns.exp %x : tensor<4x!f>
  return %0 : tensor<4x!f>
}
