//===- LnsNetworkRules.cpp - Reverse-mode rules of the lns network ops ----===//
//
// The reference's backward formulas of exp, log, tanh, sigmoid, the leaky
// rectifier, softmax, log_softmax, nll_loss and conv2d, as lns ops (the
// same formulas python/lamina/lns computes eagerly: codes agree bit for
// bit). A composite's gradient is built from the pieces lns-decompose
// expands its forward into (lamina/Lns/Transforms/Decompositions.h).
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Lns/Transforms/Decompositions.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;
namespace lns = mlir::lamina::lns;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return lns::MulOp::create(b, loc, x.getType(), x, y);
}

Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return lns::SubOp::create(b, loc, x.getType(), x, y, lns::SbdbMode::ideal);
}

/// e^x: gx = mul(g, out).
struct ExpRule : Rule<ExpRule, lns::ExpOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = mul(b, op->getLoc(), dys[0], state.getPrimal(op->getResult(0)));
    return success();
  }
};

/// log x: gx = div(g, x).
struct LogRule : Rule<LogRule, lns::LogOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Value x = state.getPrimal(op->getOperand(0));
    dxs[0] = lns::DivOp::create(b, op->getLoc(), x.getType(), dys[0], x);
    return success();
  }
};

/// tanh: gx = mul(g, sub(c1, mul(out, out))).
struct TanhRule : Rule<TanhRule, lns::TanhOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value out = state.getPrimal(op->getResult(0));
    dxs[0] = mul(b, loc, dys[0],
                 sub(b, loc, buildLnsConstantLike(b, loc, 1.0, out),
                     mul(b, loc, out, out)));
    return success();
  }
};

/// sigmoid: gx = mul(g, mul(out, sub(c1, out))).
struct SigmoidRule : Rule<SigmoidRule, lns::SigmoidOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    Location loc = op->getLoc();
    Value out = state.getPrimal(op->getResult(0));
    dxs[0] = mul(b, loc, dys[0],
                 mul(b, loc, out,
                     sub(b, loc, buildLnsConstantLike(b, loc, 1.0, out), out)));
    return success();
  }
};

struct LeakyReluRule : Rule<LeakyReluRule, lns::LeakyReluOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto leaky = cast<lns::LeakyReluOp>(op);
    if (state.isActive(leaky.getSlope()))
      return op->emitOpError("slope depends on a differentiated argument; "
                             "its gradient is not defined (a leaky "
                             "rectifier's slope is a constant)");
    dxs[0] = lns::LeakyReluGradOp::create(
        b, op->getLoc(), dys[0], state.getPrimal(leaky.getInput()),
        state.getPrimal(leaky.getSlope()));
    return success();
  }
};

/// softmax: gx = mul(out, sub(g, sum(mul(g, out)))) over `dim`.
struct SoftmaxRule : Rule<SoftmaxRule, lns::SoftmaxOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto softmax = cast<lns::SoftmaxOp>(op);
    Location loc = op->getLoc();
    Value out = state.getPrimal(softmax.getResult());
    Value dot = lns::buildSumKeepDim(b, loc, mul(b, loc, dys[0], out),
                                     softmax.getDim());
    dxs[0] = mul(b, loc, out, sub(b, loc, dys[0], dot));
    return success();
  }
};

/// log_softmax: gx = sub(g, mul(exp(out), sum(g))) over `dim`.
struct LogSoftmaxRule : Rule<LogSoftmaxRule, lns::LogSoftmaxOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto logSoftmax = cast<lns::LogSoftmaxOp>(op);
    Location loc = op->getLoc();
    Value out = state.getPrimal(logSoftmax.getResult());
    Value total = lns::buildSumKeepDim(b, loc, dys[0], logSoftmax.getDim());
    dxs[0] = sub(b, loc, dys[0],
                 mul(b, loc, lns::ExpOp::create(b, loc, out), total));
    return success();
  }
};

/// The target takes no gradient (class indices).
struct NllLossRule : Rule<NllLossRule, lns::NllLossOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto nll = cast<lns::NllLossOp>(op);
    dxs[0] = lns::NllLossGradOp::create(
        b, op->getLoc(), nll.getInput().getType(), dys[0],
        state.getPrimal(nll.getTarget()), nll.getReduction(),
        nll.getIgnoreIndex());
    return success();
  }
};

/// gx: each input position over the filters, then the kernel offsets; gw:
/// each weight over the batch, then the output positions; gb: the
/// sequential sum of g over (n, oh, ow).
struct Conv2DRule : Rule<Conv2DRule, lns::Conv2DOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto conv = cast<lns::Conv2DOp>(op);
    Location loc = op->getLoc();
    auto geometry = lns::Conv2DGeometry::of(conv);
    Value g = dys[0];
    if (state.isActive(conv.getInput()))
      dxs[0] = lns::buildConv2DInputGrad(
          b, loc, g, state.getPrimal(conv.getWeight()),
          conv.getInput().getType(), geometry);
    if (state.isActive(conv.getWeight()))
      dxs[1] = lns::buildConv2DWeightGrad(b, loc, g,
                                          state.getPrimal(conv.getInput()),
                                          conv.getWeight().getType(), geometry);
    if (Value bias = conv.getBias()) {
      auto biasType = cast<RankedTensorType>(bias.getType());
      dxs[2] = lns::SumOp::create(b, loc, biasType, g,
                                  b.getDenseI64ArrayAttr({0, 2, 3}),
                                  lns::ReductionOrder::sequential,
                                  lns::SbdbMode::ideal);
    }
    return success();
  }
};
} // namespace

void autodiff::registerLnsNetworkRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, lns::LnsDialect *) {
    lns::ExpOp::attachInterface<ExpRule>(*context);
    lns::LogOp::attachInterface<LogRule>(*context);
    lns::TanhOp::attachInterface<TanhRule>(*context);
    lns::SigmoidOp::attachInterface<SigmoidRule>(*context);
    lns::LeakyReluOp::attachInterface<LeakyReluRule>(*context);
    lns::SoftmaxOp::attachInterface<SoftmaxRule>(*context);
    lns::LogSoftmaxOp::attachInterface<LogSoftmaxRule>(*context);
    lns::NllLossOp::attachInterface<NllLossRule>(*context);
    lns::Conv2DOp::attachInterface<Conv2DRule>(*context);
  });
}
