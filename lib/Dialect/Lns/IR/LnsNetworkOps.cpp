//===- LnsNetworkOps.cpp - Verifiers of the lns network ops ---------------===//
//
// Shapes of softmax, log_softmax, nll_loss and conv2d (LnsNetworkOps.td).
//
//===----------------------------------------------------------------------===//

#include "lamina/Lns/IR/Lns.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::lamina::lns;

// The expansions of lns-decompose build static shapes, and their sums need
// a first term: every composite op takes static, non-empty shapes.
static LogicalResult verifyStatic(Operation *op, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  if (!tensor.hasStaticShape())
    return op->emitOpError("needs static shapes, got ") << type;
  if (tensor.getNumElements() == 0)
    return op->emitOpError("needs non-empty shapes, got ") << type;
  return success();
}

static LogicalResult verifyNormalizedDim(Operation *op, Value input,
                                         int64_t dim) {
  if (failed(verifyStatic(op, input.getType())))
    return failure();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  if (dim < 0 || dim >= rank)
    return op->emitOpError("dimension ")
           << dim << " is out of range for an input of rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyNormalizedDim(*this, getInput(), getDim());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyNormalizedDim(*this, getInput(), getDim());
}

//===----------------------------------------------------------------------===//
// Negative log-likelihood
//===----------------------------------------------------------------------===//

/// The checks nll_loss and its gradient share: log-probabilities [B, C]
/// (`scores`), targets [B], and the per-sample or reduced tensor
/// (`reduced`) in the same base.
static LogicalResult verifyNll(Operation *op, RankedTensorType scores,
                               Value target, RankedTensorType reduced,
                               LossReduction reduction) {
  if (failed(verifyStatic(op, scores)) ||
      failed(verifyStatic(op, target.getType())))
    return failure();
  if (scores.getRank() != 2)
    return op->emitOpError("takes log-probabilities of rank 2 [batch, "
                           "classes], got ")
           << scores;
  auto targetType = cast<RankedTensorType>(target.getType());
  if (targetType.getRank() != 1 ||
      targetType.getDimSize(0) != scores.getDimSize(0))
    return op->emitOpError("takes one class index per sample: a target of "
                           "shape [")
           << scores.getDimSize(0) << "], got " << targetType;
  if (reduced.getElementType() != scores.getElementType())
    return op->emitOpError("loss and log-probabilities must share one LNS "
                           "type, got ")
           << reduced.getElementType() << " and " << scores.getElementType();
  SmallVector<int64_t> expected;
  if (reduction == LossReduction::none)
    expected.push_back(scores.getDimSize(0));
  if (reduced.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("reduction '")
           << stringifyLossReduction(reduction) << "' gives a loss of shape ["
           << expected << "], got " << reduced;
  return success();
}

LogicalResult NllLossOp::verify() {
  return verifyNll(*this, getInput().getType(), getTarget(),
                   getResult().getType(), getReduction());
}

LogicalResult NllLossGradOp::verify() {
  return verifyNll(*this, getResult().getType(), getTarget(),
                   getGrad().getType(), getReduction());
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

LogicalResult Conv2DOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType weight = getWeight().getType();
  if (input.getRank() != 4 || weight.getRank() != 4)
    return emitOpError("takes an input [N, C, H, W] and a weight "
                       "[F, C, KH, KW], got ")
           << input << " and " << weight;
  if (failed(verifyStatic(*this, input)) || failed(verifyStatic(*this, weight)))
    return failure();
  for (auto [name, values] :
       {std::pair<StringRef, ArrayRef<int64_t>>{"strides", getStrides()},
        {"dilations", getDilations()},
        {"pad_low", getPadLow()},
        {"pad_high", getPadHigh()}}) {
    if (values.size() != 2)
      return emitOpError() << name << " needs 2 values, got "
                           << values.size();
    bool positive = name == "strides" || name == "dilations";
    for (int64_t v : values)
      if (positive ? v <= 0 : v < 0)
        return emitOpError() << name << " must be "
                             << (positive ? "positive" : "non-negative")
                             << ", got [" << values << "]";
  }
  Type element = input.getElementType();
  if (weight.getElementType() != element)
    return emitOpError("weight must have the input's LNS type ")
           << element << ", got " << weight.getElementType();
  if (weight.getDimSize(1) != input.getDimSize(1))
    return emitOpError("weight has ")
           << weight.getDimSize(1) << " input channels, the input "
           << input.getDimSize(1);
  int64_t filters = weight.getDimSize(0);
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    auto expected = RankedTensorType::get({filters}, element);
    if (biasType != expected)
      return emitOpError("bias must be ") << expected << ", got " << biasType;
  }
  SmallVector<int64_t> expected = {input.getDimSize(0), filters};
  for (int d = 0; d < 2; ++d) {
    std::optional<int64_t> padded = llvm::checkedAdd(
        input.getDimSize(2 + d), getPadLow()[d]);
    if (padded)
      padded = llvm::checkedAdd(*padded, getPadHigh()[d]);
    std::optional<int64_t> reach = llvm::checkedMulAdd(
        getDilations()[d], weight.getDimSize(2 + d) - 1, int64_t(1));
    if (!padded || !reach)
      return emitOpError("padded size or kernel reach overflows 64 bits in "
                         "spatial dimension ")
             << d;
    if (*reach > *padded)
      return emitOpError("kernel reach ")
             << *reach << " exceeds the padded input size " << *padded
             << " in spatial dimension " << d;
    expected.push_back((*padded - *reach) / getStrides()[d] + 1);
  }
  auto result = getResult().getType();
  if (result != RankedTensorType::get(expected, element))
    return emitOpError("result must be ")
           << RankedTensorType::get(expected, element) << ", got " << result;
  return success();
}
