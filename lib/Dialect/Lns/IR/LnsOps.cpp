//===- LnsOps.cpp - Verifiers, folders and canonicalizations of lns ops ---===//

#include "lamina/Lns/IR/Lns.h"
#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::lamina::lns;

#define GET_OP_CLASSES
#include "lamina/Lns/IR/LnsOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static LogicalResult verifySbdbMode(Operation *op, SbdbMode mode,
                                    NumType type) {
  if (mode != SbdbMode::table)
    return success();
  if (!type.getFracBits())
    return op->emitOpError("sbdb mode 'table' needs a base given by 'f'; ")
           << type << " has an explicit base";
  if (*type.getFracBits() > kMaxTableFracBits)
    return op->emitOpError("sbdb mode 'table' is defined for f <= ")
           << kMaxTableFracBits << ", but the result type has f = "
           << *type.getFracBits() << "; use 'ideal'";
  return success();
}

static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Element-wise operands are both scalars or both tensors of one shape.
static LogicalResult verifySameShape(Operation *op, Value lhs, Value rhs) {
  auto lhsType = dyn_cast<ShapedType>(lhs.getType());
  auto rhsType = dyn_cast<ShapedType>(rhs.getType());
  if (!lhsType && !rhsType)
    return success();
  if (!lhsType || !rhsType ||
      failed(verifyCompatibleShape(lhsType, rhsType)))
    return op->emitOpError("operands must have the same shape, got ")
           << lhs.getType() << " and " << rhs.getType();
  return success();
}

/// Applies `fn` to every code of a scalar or dense i64 constant.
static Attribute mapCodes(Attribute attr,
                          llvm::function_ref<int64_t(int64_t)> fn) {
  if (auto scalar = dyn_cast_if_present<IntegerAttr>(attr))
    return IntegerAttr::get(scalar.getType(), fn(scalar.getInt()));
  auto dense = dyn_cast_if_present<DenseIntElementsAttr>(attr);
  if (!dense)
    return {};
  return dense.mapValues(dense.getElementType(), [&](const APInt &code) {
    return APInt(64, static_cast<uint64_t>(fn(code.getSExtValue())),
                 /*isSigned=*/true);
  });
}

/// Combines the codes of two constants of the same shape element by element.
static Attribute zipCodes(Attribute lhs, Attribute rhs,
                          llvm::function_ref<int64_t(int64_t, int64_t)> fn) {
  auto lhsScalar = dyn_cast_if_present<IntegerAttr>(lhs);
  auto rhsScalar = dyn_cast_if_present<IntegerAttr>(rhs);
  if (lhsScalar && rhsScalar)
    return IntegerAttr::get(lhsScalar.getType(),
                            fn(lhsScalar.getInt(), rhsScalar.getInt()));
  auto lhsDense = dyn_cast_if_present<DenseIntElementsAttr>(lhs);
  auto rhsDense = dyn_cast_if_present<DenseIntElementsAttr>(rhs);
  if (!lhsDense || !rhsDense || lhsDense.getType() != rhsDense.getType())
    return {};
  SmallVector<int64_t> codes;
  codes.reserve(lhsDense.getNumElements());
  for (auto [a, b] : llvm::zip_equal(lhsDense.getValues<int64_t>(),
                                     rhsDense.getValues<int64_t>()))
    codes.push_back(fn(a, b));
  return DenseIntElementsAttr::get(lhsDense.getType(), codes);
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  Type resultType = getResult().getType();
  if (isa<NumType>(resultType)) {
    auto scalar = dyn_cast<IntegerAttr>(getValue());
    if (!scalar || !scalar.getType().isInteger(64))
      return emitOpError("scalar LNS constant needs an i64 code, got ")
             << getValue();
    return success();
  }
  auto dense = dyn_cast<DenseIntElementsAttr>(getValue());
  auto resultShape = cast<ShapedType>(resultType);
  if (!dense || !dense.getElementType().isInteger(64))
    return emitOpError("LNS tensor constant needs dense i64 codes, got ")
           << getValue();
  if (!resultShape.hasStaticShape() ||
      dense.getType().getShape() != resultShape.getShape())
    return emitOpError("codes of shape ")
           << dense.getType() << " do not match the result type "
           << resultType;
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Element-wise folders
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  // neg(neg(x)) = (p ^ 1) ^ 1 = p for every code, both zeros included.
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return mapCodes(adaptor.getInput(), codes::neg);
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  // abs is idempotent, and abs(neg(x)) = abs(x) for every code: both zero
  // codes map to Z, and (p ^ 1) & ~1 = p & ~1 otherwise.
  if (auto inner = getInput().getDefiningOp<AbsOp>())
    return inner.getResult();
  if (auto inner = getInput().getDefiningOp<NegOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return mapCodes(adaptor.getInput(), codes::abs);
}

OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  return mapCodes(adaptor.getInput(), codes::sqrt);
}

OpFoldResult PowIOp::fold(FoldAdaptor adaptor) {
  int64_t n = getExponent();
  return mapCodes(adaptor.getInput(),
                  [n](int64_t p) { return codes::powi(p, n); });
}

/// Binary constants fold only when both operands share a base; a base change
/// rounds in double and is left to the compiled code.
static bool sameBase(Value lhs, Value rhs) {
  return getLnsElementType(lhs.getType())
      .hasSameBase(getLnsElementType(rhs.getType()));
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (!sameBase(getLhs(), getRhs()))
    return {};
  return zipCodes(adaptor.getLhs(), adaptor.getRhs(), codes::mul);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (!sameBase(getLhs(), getRhs()))
    return {};
  return zipCodes(adaptor.getLhs(), adaptor.getRhs(), codes::div);
}

LogicalResult MulOp::verify() {
  return verifySameShape(*this, getLhs(), getRhs());
}

LogicalResult DivOp::verify() {
  if (failed(verifySameShape(*this, getLhs(), getRhs())))
    return failure();
  Attribute divisor;
  if (!matchPattern(getRhs(), m_Constant(&divisor)))
    return success();
  if (auto scalar = dyn_cast<IntegerAttr>(divisor)) {
    if (codes::isZero(scalar.getInt()))
      return emitOpError("divides by an LNS zero");
    return success();
  }
  if (auto dense = dyn_cast<DenseIntElementsAttr>(divisor)) {
    for (auto [index, code] : llvm::enumerate(dense.getValues<int64_t>()))
      if (codes::isZero(code))
        return emitOpError("divides by an LNS zero (divisor element ")
               << index << ")";
  }
  return success();
}

LogicalResult MaxOp::verify() {
  return verifySameShape(*this, getLhs(), getRhs());
}

LogicalResult MinOp::verify() {
  return verifySameShape(*this, getLhs(), getRhs());
}

LogicalResult CmpOp::verify() {
  if (failed(verifySameShape(*this, getLhs(), getRhs())))
    return failure();
  auto lhsType = dyn_cast<ShapedType>(getLhs().getType());
  auto resultType = dyn_cast<ShapedType>(getType());
  if (static_cast<bool>(lhsType) != static_cast<bool>(resultType) ||
      (lhsType && failed(verifyCompatibleShape(lhsType, resultType))))
    return emitOpError("result ")
           << getType() << " must have the shape of the operands, "
           << getLhs().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Add / Sub
//===----------------------------------------------------------------------===//

LogicalResult AddOp::verify() {
  if (failed(verifySameShape(*this, getLhs(), getRhs())))
    return failure();
  return verifySbdbMode(*this, getSbdb(), getLnsElementType(getType()));
}

LogicalResult SubOp::verify() {
  if (failed(verifySameShape(*this, getLhs(), getRhs())))
    return failure();
  return verifySbdbMode(*this, getSbdb(), getLnsElementType(getType()));
}

namespace {
/// sub(x, y) is defined as add(x, neg(y)); rewriting it leaves one addition
/// to lower and exposes neg to folding.
struct SubToAddNeg : OpRewritePattern<SubOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SubOp op,
                                PatternRewriter &rewriter) const override {
    Value negated = NegOp::create(rewriter, op.getLoc(), op.getRhs());
    rewriter.replaceOpWithNewOp<AddOp>(op, op.getLhs(), negated,
                                       op.getSbdb());
    return success();
  }
};
} // namespace

void SubOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<SubToAddNeg>(context);
}

//===----------------------------------------------------------------------===//
// SumOp
//===----------------------------------------------------------------------===//

LogicalResult SumOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> dims = getDims();
  if (dims.empty())
    return emitOpError("needs at least one dimension to reduce");
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t dim : dims) {
    if (dim < 0 || dim >= rank)
      return emitOpError("reduction dimension ")
             << dim << " is out of range for an input of rank " << rank;
    if (!seen.insert(dim).second)
      return emitOpError("reduction dimension ") << dim << " appears twice";
    if (inputType.getDimSize(dim) == 0)
      return emitOpError("reduces the empty dimension ")
             << dim << ", which has no first term";
  }
  SmallVector<int64_t> expected;
  for (int64_t dim = 0; dim < rank; ++dim)
    if (!seen.contains(dim))
      expected.push_back(inputType.getDimSize(dim));

  Type resultType = getResult().getType();
  if (getLnsElementType(resultType) != inputType.getElementType())
    return emitOpError("result element type ")
           << getLnsElementType(resultType)
           << " must equal the input element type "
           << inputType.getElementType();
  if (isa<NumType>(resultType)) {
    if (!expected.empty())
      return emitOpError("scalar result needs every dimension reduced");
  } else if (cast<ShapedType>(resultType).getShape() !=
             ArrayRef<int64_t>(expected)) {
    return emitOpError("result type ")
           << resultType << " does not match the input shape with dims ["
           << dims << "] removed";
  }
  return verifySbdbMode(*this, getSbdb(), getLnsElementType(resultType));
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhsType = cast<RankedTensorType>(getLhs().getType());
  auto rhsType = cast<RankedTensorType>(getRhs().getType());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (lhsType.getRank() < 2 || rhsType.getRank() < 2)
    return emitOpError("operands must have rank >= 2, got ")
           << lhsType << " and " << rhsType;
  ArrayRef<int64_t> lhsShape = lhsType.getShape();
  ArrayRef<int64_t> rhsShape = rhsType.getShape();
  int64_t lhsK = lhsShape.back();
  int64_t rhsK = rhsShape[rhsShape.size() - 2];
  if (!dimsCompatible(lhsK, rhsK))
    return emitOpError("contraction sizes differ: lhs has K = ")
           << lhsK << ", rhs has K = " << rhsK;

  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(lhsShape.drop_back(2),
                                          rhsShape.drop_back(2), batch))
    return emitOpError("batch dimensions of ")
           << lhsType << " and " << rhsType << " do not broadcast";
  SmallVector<int64_t> expected(batch);
  expected.push_back(lhsShape[lhsShape.size() - 2]);
  expected.push_back(rhsShape.back());
  if (failed(verifyCompatibleShape(resultType.getShape(), expected)))
    return emitOpError("result type ")
           << resultType << " does not match the product shape ["
           << ArrayRef<int64_t>(expected) << "]";
  if (resultType.getElementType() != lhsType.getElementType())
    return emitOpError("result must have the lhs's base ")
           << lhsType.getElementType() << ", got "
           << resultType.getElementType();
  return verifySbdbMode(*this, getSbdb(),
                        cast<NumType>(resultType.getElementType()));
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto weightType = cast<RankedTensorType>(getWeight().getType());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (inputType.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  if (weightType.getRank() != 2)
    return emitOpError("weight must be [out, in], got ") << weightType;
  int64_t k = inputType.getShape().back();
  int64_t n = weightType.getDimSize(0);
  if (!dimsCompatible(k, weightType.getDimSize(1)))
    return emitOpError("input width ")
           << k << " does not match the weight's in_features "
           << weightType.getDimSize(1);
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1 ||
        !dimsCompatible(biasType.getDimSize(0), n))
      return emitOpError("bias must be [")
             << n << "] to match the weight, got " << biasType;
  }
  SmallVector<int64_t> expected(inputType.getShape().drop_back());
  expected.push_back(n);
  if (failed(verifyCompatibleShape(resultType.getShape(), expected)))
    return emitOpError("result type ")
           << resultType << " does not match [..., out] = ["
           << ArrayRef<int64_t>(expected) << "]";
  if (resultType.getElementType() != inputType.getElementType())
    return emitOpError("result must have the input's base ")
           << inputType.getElementType() << ", got "
           << resultType.getElementType();
  return verifySbdbMode(*this, getSbdb(),
                        cast<NumType>(resultType.getElementType()));
}
