//===- EpilogueMath.h - Scalar math of the linear epilogue ------*- C++ -*-===//
//
// The element-wise steps after a matmul (activation, dropout) as scalar or
// vector arith/math ops, shared by the linalg lowering and the GPU kernels so
// that every target computes the same formulas and draws the same masks.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LAMINATOLINALG_EPILOGUEMATH_H
#define LAMINA_CONVERSION_LAMINATOLINALG_EPILOGUEMATH_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/Builders.h"

namespace mlir::lamina {

/// `kind` applied to the float `x` (GELU with `math.tanh` / `math.erf`,
/// which `lamina-approximate-math` turns into the shared polynomials).
Value buildActivation(OpBuilder &b, Location loc, ActivationKind kind, Value x);

/// `dy · kind'(x)`: the exact derivative of `buildActivation`'s formula.
Value buildActivationDerivative(OpBuilder &b, Location loc, ActivationKind kind,
                                Value x, Value dy);

/// The Philox stream of `dropout`: 0, or 1 + rank under fork_rng (a program
/// without a `rank` value is rank 0), as i32.
Value buildDropoutStream(OpBuilder &b, Location loc, DropoutAttr dropout,
                         Value rank);

/// Inverted dropout of the f32 `value`: value / (1 − p) where `keep` (i1)
/// holds, else 0.
Value buildDropoutApply(OpBuilder &b, Location loc, Value value, Value keep,
                        double p);

} // namespace mlir::lamina

#endif // LAMINA_CONVERSION_LAMINATOLINALG_EPILOGUEMATH_H
