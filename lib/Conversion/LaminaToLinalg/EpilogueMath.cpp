//===- EpilogueMath.cpp - Scalar math of the linear epilogue --------------===//

#include "lamina/Conversion/LaminaToLinalg/EpilogueMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::lamina;

/// σ(x) = 1 / (1 + exp(−x)): exp(−x) overflows to +inf for x below about
/// −88, where σ is then 0 as it should be, and so is every derivative that
/// multiplies by it.
static Value buildSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(x.getType(), 1.0));
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

Value mlir::lamina::buildActivation(OpBuilder &b, Location loc,
                                    ActivationKind kind, Value x) {
  Type type = x.getType();
  auto constant = [&](double value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  };
  switch (kind) {
  case ActivationKind::relu:
    return arith::MaximumFOp::create(b, loc, x, constant(0.0));
  case ActivationKind::gelu_tanh: {
    // 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³)))
    Value x3 =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value inner = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, constant(0.044715), x3));
    Value t = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, constant(0.7978845608028654), inner));
    Value half = arith::MulFOp::create(b, loc, constant(0.5), x);
    return arith::MulFOp::create(
        b, loc, half, arith::AddFOp::create(b, loc, constant(1.0), t));
  }
  case ActivationKind::gelu_erf: {
    // 0.5·x·(1 + erf(x/√2))
    Value e = math::ErfOp::create(
        b, loc, arith::MulFOp::create(b, loc, constant(0.7071067811865476), x));
    Value half = arith::MulFOp::create(b, loc, constant(0.5), x);
    return arith::MulFOp::create(
        b, loc, half, arith::AddFOp::create(b, loc, constant(1.0), e));
  }
  case ActivationKind::silu:
    return arith::MulFOp::create(b, loc, x, buildSigmoid(b, loc, x));
  case ActivationKind::sigmoid:
    return buildSigmoid(b, loc, x);
  }
  llvm_unreachable("unknown activation");
}

Value mlir::lamina::buildActivationDerivative(OpBuilder &b, Location loc,
                                             ActivationKind kind, Value x,
                                             Value dy) {
  Type type = x.getType();
  auto constant = [&](double value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  };
  auto mul = [&](Value l, Value r) -> Value {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) -> Value {
    return arith::AddFOp::create(b, loc, l, r);
  };
  switch (kind) {
  case ActivationKind::relu: {
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           x, constant(0.0));
    return arith::SelectOp::create(b, loc, positive, dy, constant(0.0));
  }
  case ActivationKind::gelu_tanh: {
    // t = tanh(√(2/π)·(x + 0.044715·x³));
    // 0.5·x·(1 − t²)·(√(2/π) + 0.1070322243·x²) + 0.5·(1 + t)
    Value x2 = mul(x, x);
    Value inner = add(x, mul(constant(0.044715), mul(x, x2)));
    Value t = math::TanhOp::create(b, loc, mul(constant(0.7978845608028654),
                                               inner));
    Value oneMinusT2 = arith::SubFOp::create(b, loc, constant(1.0), mul(t, t));
    Value slope = add(constant(0.7978845608028654),
                      mul(constant(0.1070322243), x2));
    Value derivative = add(mul(mul(constant(0.5), x), mul(oneMinusT2, slope)),
                           mul(constant(0.5), add(constant(1.0), t)));
    return mul(dy, derivative);
  }
  case ActivationKind::gelu_erf: {
    // Φ(x) + x·φ(x) = 0.5·(1 + erf(x/√2)) + x·exp(−x²/2)/√(2π)
    Value e = math::ErfOp::create(b, loc, mul(constant(0.7071067811865476), x));
    Value cdf = mul(constant(0.5), add(constant(1.0), e));
    Value density = mul(constant(0.3989422804014327),
                        math::ExpOp::create(b, loc, mul(constant(-0.5),
                                                        mul(x, x))));
    return mul(dy, add(cdf, mul(x, density)));
  }
  case ActivationKind::silu: {
    // σ(x)·(1 + x·(1 − σ(x)))
    Value s = buildSigmoid(b, loc, x);
    Value oneMinusS = arith::SubFOp::create(b, loc, constant(1.0), s);
    return mul(dy, mul(s, add(constant(1.0), mul(x, oneMinusS))));
  }
  case ActivationKind::sigmoid: {
    // σ(x)·(1 − σ(x))
    Value s = buildSigmoid(b, loc, x);
    return mul(dy, mul(s, arith::SubFOp::create(b, loc, constant(1.0), s)));
  }
  }
  llvm_unreachable("unknown activation");
}

Value mlir::lamina::buildDropoutStream(OpBuilder &b, Location loc,
                                       DropoutAttr dropout, Value rank) {
  if (!dropout.getForkRng())
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value one = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1));
  if (!rank)
    return one;
  Value rank32 = arith::IndexCastUIOp::create(b, loc, b.getI32Type(), rank);
  return arith::AddIOp::create(b, loc, rank32, one);
}

Value mlir::lamina::buildDropoutApply(OpBuilder &b, Location loc, Value value,
                                      Value keep, double p) {
  Value scale = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(1.0 / (1.0 - p))));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  return arith::SelectOp::create(
      b, loc, keep, arith::MulFOp::create(b, loc, value, scale), zero);
}
