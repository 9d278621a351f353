//===- LnsRules.cpp - Reverse-mode rules of lns ops -----------------------===//
//
// The LNS training spec's backward rules (xlnstorch's), as lns ops: every
// gradient is computed in LNS arithmetic in the forward's base, operands of
// another base get theirs back by a change of base, and the reductions of
// dW and db run in the reference's sequential order (lns.matmul and lns.sum
// are sequential by definition). Python's eager LNS autograd
// (python/lamina/lns/autograd.py) follows the same rules on the same
// kernels.
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;
namespace lns = mlir::lamina::lns;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

/// `value` in the LNS type `type` (same shape): a change of base when the
/// bases differ.
Value toType(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type || lns::getLnsElementType(value.getType())
                                     .hasSameBase(lns::getLnsElementType(type)))
    return value;
  return lns::ChangeBaseOp::create(b, loc, type, value);
}

/// `value` (a tensor) with its element type replaced by `like`'s.
Type withElementOf(Value value, Value like) {
  return cast<RankedTensorType>(value.getType())
      .clone(cast<ShapedType>(like.getType()).getElementType());
}

} // namespace

Value autodiff::buildLnsConstantLike(OpBuilder &b, Location loc, double v,
                                     Value like) {
  lns::NumType num = lns::getLnsElementType(like.getType());
  int64_t code = lns::codes::encode(v, num.getLogBase());
  auto type = dyn_cast<RankedTensorType>(like.getType());
  if (!type)
    return lns::ConstantOp::create(b, loc, like.getType(),
                                   b.getI64IntegerAttr(code));
  auto codes = RankedTensorType::get(type.getShape(), b.getI64Type());
  return lns::ConstantOp::create(
      b, loc, type, DenseIntElementsAttr::get(codes, ArrayRef<int64_t>{code}));
}

namespace {

struct AddRule : Rule<AddRule, lns::AddOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto add = cast<lns::AddOp>(op);
    dxs[0] = dys[0];
    dxs[1] = toType(b, op->getLoc(), dys[0], add.getRhs().getType());
    return success();
  }
};

struct SubRule : Rule<SubRule, lns::SubOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto sub = cast<lns::SubOp>(op);
    dxs[0] = dys[0];
    dxs[1] =
        toType(b, op->getLoc(), lns::NegOp::create(b, op->getLoc(), dys[0]),
               sub.getRhs().getType());
    return success();
  }
};

struct NegRule : Rule<NegRule, lns::NegOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = lns::NegOp::create(b, op->getLoc(), dys[0]);
    return success();
  }
};

/// gx = mul(g, y), gy = mul(g, x), with y in x's base.
struct MulRule : Rule<MulRule, lns::MulOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto mul = cast<lns::MulOp>(op);
    Location loc = op->getLoc();
    Value x = state.getPrimal(mul.getLhs());
    Value y = toType(b, loc, state.getPrimal(mul.getRhs()), x.getType());
    dxs[0] = lns::MulOp::create(b, loc, dys[0].getType(), dys[0], y);
    dxs[1] =
        toType(b, loc, lns::MulOp::create(b, loc, dys[0].getType(), dys[0], x),
               mul.getRhs().getType());
    return success();
  }
};

/// gx = div(g, y); gy = mul(g, mul(div(x, mul(y, y)), cm1)), in that nesting.
struct DivRule : Rule<DivRule, lns::DivOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto div = cast<lns::DivOp>(op);
    Location loc = op->getLoc();
    Type type = dys[0].getType();
    Value x = state.getPrimal(div.getLhs());
    Value y = toType(b, loc, state.getPrimal(div.getRhs()), x.getType());
    dxs[0] = lns::DivOp::create(b, loc, type, dys[0], y);
    Value square = lns::MulOp::create(b, loc, type, y, y);
    Value ratio = lns::DivOp::create(b, loc, type, x, square);
    Value flipped = lns::MulOp::create(b, loc, type, ratio,
                                       buildLnsConstantLike(b, loc, -1.0, x));
    dxs[1] = toType(b, loc, lns::MulOp::create(b, loc, type, dys[0], flipped),
                    div.getRhs().getType());
    return success();
  }
};

struct ReluRule : Rule<ReluRule, lns::ReluOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto relu = cast<lns::ReluOp>(op);
    dxs[0] = lns::ReluGradOp::create(b, op->getLoc(), dys[0],
                                     state.getPrimal(relu.getResult()));
    return success();
  }
};

/// x^n: gx = mul(g, mul(enc(n), x^(n-1))).
struct PowIRule : Rule<PowIRule, lns::PowIOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto powi = cast<lns::PowIOp>(op);
    Location loc = op->getLoc();
    Type type = powi.getType();
    int64_t n = powi.getExponent();
    Value x = state.getPrimal(powi.getInput());
    Value lower = lns::PowIOp::create(b, loc, type, x, n - 1);
    Value slope = lns::MulOp::create(
        b, loc, type, buildLnsConstantLike(b, loc, static_cast<double>(n), x),
        lower);
    dxs[0] = lns::MulOp::create(b, loc, type, dys[0], slope);
    return success();
  }
};

/// The cotangent broadcast back over the reduced dims, no arithmetic (the
/// spec's fix: the reference returns c1 whatever g is).
struct SumRule : Rule<SumRule, lns::SumOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto sum = cast<lns::SumOp>(op);
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(sum.getInput().getType());
    // Only a dynamic shape needs the input itself (saved or recomputed).
    Value init = type.hasStaticShape()
                     ? tensor::EmptyOp::create(b, loc, type.getShape(),
                                               type.getElementType())
                     : tensor::EmptyOp::create(
                           b, loc,
                           tensor::getMixedSizes(
                               b, loc, state.getPrimal(sum.getInput())),
                           type.getElementType());
    dxs[0] = linalg::BroadcastOp::create(b, loc, dys[0], init, sum.getDims())
                 .getResult()[0];
    return success();
  }
};

struct ChangeBaseRule : Rule<ChangeBaseRule, lns::ChangeBaseOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto change = cast<lns::ChangeBaseOp>(op);
    dxs[0] = lns::ChangeBaseOp::create(b, op->getLoc(),
                                       change.getInput().getType(), dys[0]);
    return success();
  }
};

/// The sum of the rows of `rows` [M, N] (codes), in order: [N].
Value buildRowSum(OpBuilder &b, Location loc, Value rows, lns::SbdbMode sbdb) {
  auto type = cast<RankedTensorType>(rows.getType());
  auto sumType = RankedTensorType::get({type.getDimSize(1)},
                                       type.getElementType());
  return lns::SumOp::create(b, loc, sumType, rows, b.getDenseI64ArrayAttr({0}),
                            lns::ReductionOrder::sequential, sbdb);
}

/// A[M, K]·B[K, N] with the sequential sums of lns.matmul, as an lns.linear
/// (x·Wᵀ with W = Bᵀ): the same order of additions, through the layer's
/// vectorized kernels.
Value buildProduct(OpBuilder &b, Location loc, Value lhs, Value rhs,
                   Type resultType, lns::SbdbMode sbdb) {
  return lns::LinearOp::create(b, loc, resultType, lhs,
                               buildTranspose2D(b, loc, rhs), Value(), sbdb);
}

/// R = A·B on matrices: gA = g·Bᵀ summed over n in order, gB = Aᵀ·g summed
/// over m in order.
struct MatmulRule : Rule<MatmulRule, lns::MatmulOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto matmul = cast<lns::MatmulOp>(op);
    auto lhsType = cast<RankedTensorType>(matmul.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(matmul.getRhs().getType());
    if (lhsType.getRank() != 2 || rhsType.getRank() != 2)
      return op->emitOpError("backward is generated for matrices (rank 2), "
                             "got ")
             << lhsType << " and " << rhsType;
    Location loc = op->getLoc();
    Value a = state.getPrimal(matmul.getLhs());
    Value bMatrix = toType(b, loc, state.getPrimal(matmul.getRhs()),
                           withElementOf(matmul.getRhs(), a));
    // g·Bᵀ is lns.linear(g, B): B [K, N] is the weight.
    dxs[0] = lns::LinearOp::create(b, loc, lhsType, dys[0], bMatrix, Value(),
                                   matmul.getSbdb());
    Value gb =
        buildProduct(b, loc, buildTranspose2D(b, loc, a), dys[0],
                     withElementOf(matmul.getRhs(), a), matmul.getSbdb());
    dxs[1] = toType(b, loc, gb, rhsType);
    return success();
  }
};

/// y = x·Wᵀ + b, x [..., K]: gx = g·W over n; gW = g2ᵀ·x2 and gb = the
/// sum of g2's rows, one sequential reduction over all leading rows
/// flattened (g2 = g as [rows, N], x2 = x as [rows, K]).
struct LinearRule : Rule<LinearRule, lns::LinearOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto linear = cast<lns::LinearOp>(op);
    auto inputType = cast<RankedTensorType>(linear.getInput().getType());
    if (inputType.getRank() < 2 || !inputType.hasStaticShape())
      return op->emitOpError("backward is generated for static inputs of "
                             "rank 2 or more, got ")
             << inputType;
    Location loc = op->getLoc();
    lns::SbdbMode sbdb = linear.getSbdb();
    Value x = state.getPrimal(linear.getInput());
    Value w = toType(b, loc, state.getPrimal(linear.getWeight()),
                     withElementOf(linear.getWeight(), x));
    Value rowsOfG = buildFlattenRows(b, loc, dys[0]);
    Value rowsOfX = buildFlattenRows(b, loc, x);
    auto rowsType = cast<RankedTensorType>(rowsOfX.getType());
    Value gxRows = buildProduct(b, loc, rowsOfG, w, rowsType, sbdb);
    dxs[0] = gxRows;
    if (inputType.getRank() > 2)
      dxs[0] = tensor::ExpandShapeOp::create(
          b, loc, inputType, gxRows,
          cast<tensor::CollapseShapeOp>(rowsOfX.getDefiningOp())
              .getReassociationIndices());
    Value gw = buildProduct(b, loc, buildTranspose2D(b, loc, rowsOfG), rowsOfX,
                            w.getType(), sbdb);
    dxs[1] = toType(b, loc, gw, linear.getWeight().getType());
    if (Value bias = linear.getBias())
      dxs[2] = toType(b, loc, buildRowSum(b, loc, rowsOfG, sbdb),
                      bias.getType());
    return success();
  }
};

/// x' = encode(x) is x rounded to a code: its cotangent passes through,
/// decoded to x's float type.
struct EncodeRule : Rule<EncodeRule, lns::EncodeOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto encode = cast<lns::EncodeOp>(op);
    dxs[0] = lns::DecodeOp::create(b, op->getLoc(),
                                   encode.getInput().getType(), dys[0]);
    return success();
  }
};

/// y = decode(c): the float cotangent of y, encoded in c's base, is c's.
struct DecodeRule : Rule<DecodeRule, lns::DecodeOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto decode = cast<lns::DecodeOp>(op);
    dxs[0] = lns::EncodeOp::create(b, op->getLoc(),
                                   decode.getInput().getType(), dys[0]);
    return success();
  }
};
} // namespace

Value autodiff::buildLnsSumLeadingDims(OpBuilder &b, Location loc,
                                       Value value) {
  return buildRowSum(b, loc, buildFlattenRows(b, loc, value),
                     lns::SbdbMode::ideal);
}

void autodiff::registerLnsRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, lns::LnsDialect *) {
    lns::AddOp::attachInterface<AddRule>(*context);
    lns::SubOp::attachInterface<SubRule>(*context);
    lns::NegOp::attachInterface<NegRule>(*context);
    lns::MulOp::attachInterface<MulRule>(*context);
    lns::DivOp::attachInterface<DivRule>(*context);
    lns::ReluOp::attachInterface<ReluRule>(*context);
    lns::PowIOp::attachInterface<PowIRule>(*context);
    lns::SumOp::attachInterface<SumRule>(*context);
    lns::ChangeBaseOp::attachInterface<ChangeBaseRule>(*context);
    lns::MatmulOp::attachInterface<MatmulRule>(*context);
    lns::LinearOp::attachInterface<LinearRule>(*context);
    lns::EncodeOp::attachInterface<EncodeRule>(*context);
    lns::DecodeOp::attachInterface<DecodeRule>(*context);
  });
}
