//===- MathRules.cpp - Reverse-mode rules of math ops on tensors ----------===//
//
// The element-wise math the importer writes for hand-written formulas
// (tanh, cos, sin, exp, sqrt, rsqrt, x^c): each derivative from the
// forward's result where that is cheaper than from its input.
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/TypeUtilities.h"

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

/// `value` splat into a constant of `type` (a float tensor or scalar).
Value splat(OpBuilder &b, Location loc, Type type, double value) {
  Type element = getElementTypeOrSelf(type);
  TypedAttr scalar = b.getFloatAttr(element, value);
  if (auto shaped = dyn_cast<ShapedType>(type))
    return arith::ConstantOp::create(b, loc,
                                     SplatElementsAttr::get(shaped, scalar));
  return arith::ConstantOp::create(b, loc, scalar);
}

Value mul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::MulFOp::create(b, loc, lhs, rhs);
}

/// d tanh(x) = dy · (1 − y²).
struct TanhRule : Rule<TanhRule, math::TanhOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value y = state.getPrimal(op->getResult(0));
    Value one = splat(b, loc, y.getType(), 1.0);
    dxs[0] = mul(b, loc, dys[0],
                 arith::SubFOp::create(b, loc, one, mul(b, loc, y, y)));
    return success();
  }
};

/// d cos(x) = −dy · sin(x).
struct CosRule : Rule<CosRule, math::CosOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value sin = math::SinOp::create(b, loc, state.getPrimal(op->getOperand(0)));
    dxs[0] = arith::NegFOp::create(b, loc, mul(b, loc, dys[0], sin));
    return success();
  }
};

/// d sin(x) = dy · cos(x).
struct SinRule : Rule<SinRule, math::SinOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value cos = math::CosOp::create(b, loc, state.getPrimal(op->getOperand(0)));
    dxs[0] = mul(b, loc, dys[0], cos);
    return success();
  }
};

/// d exp(x) = dy · y.
struct ExpRule : Rule<ExpRule, math::ExpOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = mul(b, op->getLoc(), dys[0], state.getPrimal(op->getResult(0)));
    return success();
  }
};

/// d sqrt(x) = dy · 0.5 / y.
struct SqrtRule : Rule<SqrtRule, math::SqrtOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value y = state.getPrimal(op->getResult(0));
    Value half = splat(b, loc, y.getType(), 0.5);
    dxs[0] = arith::DivFOp::create(b, loc, mul(b, loc, dys[0], half), y);
    return success();
  }
};

/// d rsqrt(x) = dy · (−0.5) · y³, as x^(−3/2) = y³.
struct RsqrtRule : Rule<RsqrtRule, math::RsqrtOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value y = state.getPrimal(op->getResult(0));
    Value cube = mul(b, loc, mul(b, loc, y, y), y);
    Value factor = splat(b, loc, y.getType(), -0.5);
    dxs[0] = mul(b, loc, dys[0], mul(b, loc, factor, cube));
    return success();
  }
};

/// y = x^c: dx = dy · c · x^(c − 1); dc = dy · y · log(x) (only when the
/// exponent itself depends on an argument).
struct PowFRule : Rule<PowFRule, math::PowFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto pow = cast<math::PowFOp>(op);
    Location loc = op->getLoc();
    Value x = state.getPrimal(pow.getLhs());
    Value c = state.getPrimal(pow.getRhs());
    Value one = splat(b, loc, c.getType(), 1.0);
    Value lower =
        math::PowFOp::create(b, loc, x, arith::SubFOp::create(b, loc, c, one));
    dxs[0] = mul(b, loc, dys[0], mul(b, loc, c, lower));
    if (!pow.getRhs().getDefiningOp<arith::ConstantOp>()) {
      Value y = state.getPrimal(pow.getResult());
      dxs[1] =
          mul(b, loc, dys[0], mul(b, loc, y, math::LogOp::create(b, loc, x)));
    }
    return success();
  }
};
} // namespace

void mlir::lamina::autodiff::registerMathRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, math::MathDialect *) {
    math::TanhOp::attachInterface<TanhRule>(*context);
    math::CosOp::attachInterface<CosRule>(*context);
    math::SinOp::attachInterface<SinRule>(*context);
    math::ExpOp::attachInterface<ExpRule>(*context);
    math::SqrtOp::attachInterface<SqrtRule>(*context);
    math::RsqrtOp::attachInterface<RsqrtRule>(*context);
    math::PowFOp::attachInterface<PowFRule>(*context);
  });
}
