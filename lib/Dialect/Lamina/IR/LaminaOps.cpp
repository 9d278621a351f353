//===- LaminaOps.cpp - Verifiers, folders, canonicalizations of lamina ----===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaLayoutInterface.h"
#include "lamina/Lamina/IR/LaminaNumberFormatInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

#include "lamina/Lamina/IR/LaminaAutodiffInterface.cpp.inc"
#include "lamina/Lamina/IR/LaminaInterfaces.cpp.inc"
#include "lamina/Lamina/IR/LaminaLayoutInterface.cpp.inc"
#include "lamina/Lamina/IR/LaminaNumberFormatInterface.cpp.inc"

#define GET_OP_CLASSES
#include "lamina/Lamina/IR/LaminaOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared verification
//===----------------------------------------------------------------------===//

static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static std::string formatDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

/// Float inputs: x and W share an element type; the result has it too or is
/// f32 (f32 accumulation of f16/bf16). LNS inputs: any bases, the result in
/// x's base (the spec's mixed-base rule).
static LogicalResult verifyLinearElementTypes(Operation *op, Type inputElt,
                                              Type weightElt, Type resultElt) {
  bool inputLns = isa<lns::NumType>(inputElt);
  if (inputLns != isa<lns::NumType>(weightElt))
    return op->emitOpError("input and weight must both be floats or both "
                           "LNS numbers, got ")
           << inputElt << " and " << weightElt;
  if (inputLns) {
    if (resultElt != inputElt)
      return op->emitOpError("LNS result must have the input's base ")
             << inputElt << ", got " << resultElt;
    return success();
  }
  if (inputElt != weightElt)
    return op->emitOpError("input and weight element types differ: ")
           << inputElt << " and " << weightElt;
  if (resultElt != inputElt && !resultElt.isF32())
    return op->emitOpError("result element type must be the input's (")
           << inputElt << ") or f32, got " << resultElt;
  return success();
}

/// A bias is [N], floats of any supported width (it is added in the result
/// type) or LNS numbers of any base when the data is LNS.
static LogicalResult verifyBias(Operation *op, Value bias, int64_t n,
                                Type dataElt) {
  auto biasType = cast<RankedTensorType>(bias.getType());
  if (biasType.getRank() != 1 || !dimsCompatible(biasType.getDimSize(0), n))
    return op->emitOpError("bias must have shape [")
           << formatDim(n) << "] (one value per output feature), got "
           << biasType;
  if (isa<lns::NumType>(dataElt) != isa<lns::NumType>(biasType.getElementType()))
    return op->emitOpError("bias element type ")
           << biasType.getElementType() << " does not go with " << dataElt;
  return success();
}

/// x[..., K] · W[N, K]ᵀ (+ b[N]) = y[..., N].
static LogicalResult verifyLinear(Operation *op, Value input, Value weight,
                                  Value bias, Value result) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  auto resultType = cast<RankedTensorType>(result.getType());
  if (inputType.getRank() < 1)
    return op->emitOpError("input must have rank >= 1, got ") << inputType;
  if (weightType.getRank() != 2)
    return op->emitOpError("weight must be 2-D [out_features, "
                           "in_features], got ")
           << weightType;
  int64_t k = inputType.getShape().back();
  int64_t n = weightType.getDimSize(0);
  if (!dimsCompatible(k, weightType.getDimSize(1)))
    return op->emitOpError("input width ")
           << formatDim(k) << " does not match in_features "
           << formatDim(weightType.getDimSize(1))
           << " of the weight [out_features, in_features]";
  if (resultType.getRank() != inputType.getRank())
    return op->emitOpError("result rank ")
           << resultType.getRank() << " differs from the input rank "
           << inputType.getRank();
  for (int64_t i = 0, e = inputType.getRank() - 1; i < e; ++i)
    if (!dimsCompatible(inputType.getDimSize(i), resultType.getDimSize(i)))
      return op->emitOpError("result dimension ")
             << i << " is " << formatDim(resultType.getDimSize(i))
             << " but the input's is " << formatDim(inputType.getDimSize(i));
  if (!dimsCompatible(resultType.getShape().back(), n))
    return op->emitOpError("result width ")
           << formatDim(resultType.getShape().back())
           << " does not match out_features " << formatDim(n);
  if (failed(verifyLinearElementTypes(op, inputType.getElementType(),
                                      weightType.getElementType(),
                                      resultType.getElementType())))
    return failure();
  if (bias)
    return verifyBias(op, bias, n, resultType.getElementType());
  return success();
}

/// A sync attached to a layer acts on the matmul result, before the bias.
static LogicalResult verifyLayerSync(Operation *op, SyncAttr sync,
                                     Value result) {
  if (!sync)
    return success();
  if (sync.getMode() != SyncMode::fwd_post)
    return op->emitOpError("a layer's sync acts on its matmul result and "
                           "must be fwd_post, got ")
           << stringifySyncMode(sync.getMode())
           << "; express it as a lamina.sync on the value instead";
  int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
  if (sync.getAxis() && *sync.getAxis() >= rank)
    return op->emitOpError("sync axis ")
           << *sync.getAxis() << " is out of range for a result of rank "
           << rank;
  return success();
}

static LogicalResult verifyDropoutSeed(Operation *op, DropoutAttr dropout,
                                       Value seed) {
  if (dropout && dropout.isActive() && !seed)
    return op->emitOpError("an active dropout (training, p > 0) needs a "
                           "seed operand");
  return success();
}

/// An offset base moves the offset of a mask that is drawn: one needs a
/// seed.
static LogicalResult verifyOffsetBase(Operation *op, Value seed,
                                      Value offsetBase) {
  if (offsetBase && !seed)
    return op->emitOpError("an offset_base needs a seed operand: only an "
                           "active dropout draws a mask");
  return success();
}

/// A sharded dropout needs the rank that locates its block, on an axis of
/// the value it drops.
static LogicalResult verifyDropoutRank(Operation *op, DropoutAttr dropout,
                                       Value rank, Type valueType) {
  if (!dropout || !dropout.getShardAxis())
    return success();
  if (!rank)
    return op->emitOpError("a dropout sharded on axis ")
           << *dropout.getShardAxis()
           << " needs a rank operand to locate its block";
  int64_t valueRank = cast<RankedTensorType>(valueType).getRank();
  if (*dropout.getShardAxis() >= valueRank)
    return op->emitOpError("dropout shard_axis ")
           << *dropout.getShardAxis() << " is out of range for rank "
           << valueRank;
  return success();
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  return verifyLinear(*this, getInput(), getWeight(), getBias(), getResult());
}

LogicalResult LinearWithSeparateBiasOp::verify() {
  return verifyLinear(*this, getInput(), getWeight(), getBias(), getResult());
}

LogicalResult LinearWithSyncOp::verify() {
  if (failed(verifyLinear(*this, getInput(), getWeight(), getBias(),
                          getResult())))
    return failure();
  return verifyLayerSync(*this, getSyncAttr(), getResult());
}

LogicalResult LinearWithActOp::verify() {
  if (failed(verifyLinear(*this, getInput(), getWeight(), getBias(),
                          getResult())))
    return failure();
  return verifyLayerSync(*this, getSyncAttr(), getResult());
}

LogicalResult LinearWithDropoutOp::verify() {
  if (failed(verifyLinear(*this, getInput(), getWeight(), getBias(),
                          getResult())) ||
      failed(verifyLayerSync(*this, getSyncAttr(), getResult())))
    return failure();
  if (failed(verifyDropoutSeed(*this, getDropout(), getSeed())))
    return failure();
  return verifyOffsetBase(*this, getSeed(), getOffsetBase());
}

LogicalResult FusedLinearOp::verify() {
  if (failed(verifyLinear(*this, getInput(), getWeight(), getBias(),
                          getResult())) ||
      failed(verifyLayerSync(*this, getSyncAttr(), getResult())))
    return failure();
  bool lnsData = isa<lns::NumType>(getResult().getType().getElementType());
  if (lnsData && (getActivationAttr() || getDropoutAttr()))
    return emitOpError("activation and dropout epilogues need float data, "
                       "not LNS numbers");
  if (failed(verifyDropoutSeed(*this, getDropoutAttr(), getSeed())) ||
      failed(verifyDropoutRank(*this, getDropoutAttr(), getRank(), getType())) ||
      failed(verifyOffsetBase(*this, getSeed(), getOffsetBase())))
    return failure();
  return verifyRopeEpilogue();
}

/// The rotary embedding epilogue: the tables of `lamina.rope` on the result
/// viewed as [..., heads, head_dim], and no other epilogue step.
LogicalResult FusedLinearOp::verifyRopeEpilogue() {
  if (!getRopeCos() && !getRopeSin())
    return success();
  if (!getRopeCos() || !getRopeSin())
    return emitOpError("a rope epilogue takes both tables, cos and sin");
  if (getSyncAttr() || getBias() || getActivationAttr() || getDropoutAttr())
    return emitOpError("a rope epilogue takes no sync, bias, activation or "
                       "dropout");
  auto cos = cast<RankedTensorType>(getRopeCos().getType());
  if (getRopeSin().getType() != cos)
    return emitOpError("rope tables cos and sin must have the same type");
  RankedTensorType result = getType();
  if (!cos.hasStaticShape() || !result.hasStaticShape())
    return emitOpError("a rope epilogue needs static shapes");
  if (cos.getRank() != result.getRank() + 1)
    return emitOpError("rope tables have the rank of the result viewed as "
                       "[..., heads, head_dim], ")
           << result.getRank() + 1 << ", not " << cos.getRank();
  int64_t headDim = 2 * cos.getShape().back();
  int64_t features = result.getShape().back();
  if (headDim == 0 || features % headDim != 0)
    return emitOpError("rope tables of ")
           << cos.getShape().back() << " angles give heads of " << headDim
           << " features, which do not divide the result's " << features;
  SmallVector<int64_t> view(result.getShape().drop_back());
  view.append({features / headDim, cos.getShape().back()});
  for (auto [dim, table, size] : llvm::enumerate(cos.getShape(), view))
    if (table != size && table != 1)
      return emitOpError("rope table dim ")
             << dim << " is " << table << "; it must be " << size
             << " (the result viewed as [..., heads, head_dim / 2]) or 1";
  return success();
}

LogicalResult FusedQKVOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto weightType = cast<RankedTensorType>(getWeight().getType());
  auto qType = cast<RankedTensorType>(getQ().getType());
  if (getK().getType() != qType || getV().getType() != qType)
    return emitOpError("q, k and v must have the same type");
  int64_t numHeads = getNumHeads();
  int64_t worldSize = getWorldSize();
  int64_t hidden = inputType.getShape().back();
  if (ShapedType::isDynamic(hidden))
    return emitOpError("hidden size (the input's last dimension) must be "
                       "static");
  if (hidden % numHeads != 0)
    return emitOpError("hidden size ")
           << hidden << " is not divisible by num_heads " << numHeads;
  if (numHeads % worldSize != 0)
    return emitOpError("num_heads ")
           << numHeads << " is not divisible by world_size " << worldSize;
  int64_t headDim = hidden / numHeads;

  if (qType.getRank() != inputType.getRank() + 1)
    return emitOpError("q, k, v must be [..., heads, head_dim] with rank ")
           << inputType.getRank() + 1 << ", got " << qType;
  for (int64_t i = 0, e = inputType.getRank() - 1; i < e; ++i)
    if (!dimsCompatible(inputType.getDimSize(i), qType.getDimSize(i)))
      return emitOpError("q/k/v dimension ")
             << i << " is " << formatDim(qType.getDimSize(i))
             << " but the input's is " << formatDim(inputType.getDimSize(i));
  int64_t heads = qType.getShape().drop_back().back();
  if (heads != numHeads && heads != numHeads / worldSize)
    return emitOpError("q/k/v hold ")
           << formatDim(heads) << " heads; expected num_heads (" << numHeads
           << ") or num_heads / world_size (" << numHeads / worldSize << ")";
  if (qType.getShape().back() != headDim)
    return emitOpError("head_dim of q/k/v is ")
           << formatDim(qType.getShape().back()) << ", expected hidden / "
           << "num_heads = " << headDim;

  if (weightType.getRank() != 2 || weightType.getDimSize(1) != hidden ||
      weightType.getDimSize(0) != 3 * heads * headDim)
    return emitOpError("weight must be [3·heads·head_dim, hidden] = [")
           << 3 * heads * headDim << ", " << hidden << "], got " << weightType;
  if (failed(verifyLinearElementTypes(*this, inputType.getElementType(),
                                      weightType.getElementType(),
                                      qType.getElementType())) ||
      failed(verifyBias(*this, getBias(), 3 * heads * headDim,
                        qType.getElementType())))
    return failure();

  // Whole-tensor form with world_size > 1: the weight must be split by heads.
  if (worldSize > 1 && heads == numHeads) {
    LayoutAttr layout = getDeclaredLayout(getWeight());
    if (layout && !(layout.getKind() == LayoutKind::sharded &&
                    layout.getAxis() == 0))
      return emitOpError("world_size ")
             << worldSize << " needs the weight sharded on axis 0, but it is "
             << layout;
    std::optional<int64_t> programWorldSize =
        getGridAxisSize(*this, LaminaDialect::kTensorAxisName);
    if (programWorldSize && *programWorldSize != worldSize)
      return emitOpError("world_size ")
             << worldSize << " differs from the program's world size "
             << *programWorldSize;
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (inputType.getRank() < 1)
    return emitOpError("input must have rank >= 1, got ") << inputType;
  if (getResult().getType() != inputType)
    return emitOpError("result type ")
           << getResult().getType() << " differs from the input type "
           << inputType;
  int64_t features = inputType.getShape().back();
  for (auto [name, value] : {std::pair<StringRef, Value>{"weight", getWeight()},
                             {"bias", getBias()}}) {
    if (!value)
      continue;
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || !dimsCompatible(type.getDimSize(0), features))
      return emitOpError() << name << " must have shape [" << formatDim(features)
                           << "] (one value per normalized feature), got "
                           << type;
  }
  if (!(getEpsilon().convertToDouble() >= 0)) // NaN too
    return emitOpError("eps must be non-negative, got ")
           << getEpsilon().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Primitive pieces
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  return verifyLinear(*this, getInput(), getWeight(), /*bias=*/nullptr,
                      getResult());
}

LogicalResult BiasAddOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (inputType.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  return verifyBias(*this, getBias(), inputType.getShape().back(),
                    inputType.getElementType());
}

OpFoldResult ActivationOp::fold(FoldAdaptor) {
  // relu is idempotent.
  if (getKind() == ActivationKind::relu)
    if (auto inner = getInput().getDefiningOp<ActivationOp>())
      if (inner.getKind() == ActivationKind::relu)
        return inner.getResult();
  return {};
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyDropoutSeed(*this, getConfig(), getSeed())))
    return failure();
  if (failed(verifyOffsetBase(*this, getSeed(), getOffsetBase())))
    return failure();
  return verifyDropoutRank(*this, getConfig(), getRank(), getType());
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  // Eval mode and p = 0 keep every element unscaled.
  if (!getConfig().isActive())
    return getInput();
  return {};
}

namespace {
/// Training-mode dropout with p = 1 zeroes everything.
struct DropoutAllToZeros : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!op.getConfig().isActive() || op.getConfig().getProbability() != 1.0 ||
        !type.hasStaticShape())
      return failure();
    auto zero = DenseElementsAttr::get(
        type, rewriter.getFloatAttr(type.getElementType(), 0.0));
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, zero);
    return success();
  }
};
} // namespace

/// `config` with `base` added to its offset.
static DropoutAttr addToOffset(DropoutAttr config, const APInt &base) {
  return config.withOffset(config.getOffset() + base.getZExtValue());
}

LogicalResult DropoutOp::foldConstantOffsetBase() {
  APInt base;
  if (!getOffsetBase() || !matchPattern(getOffsetBase(), m_ConstantInt(&base)))
    return failure();
  setConfigAttr(addToOffset(getConfig(), base));
  getOffsetBaseMutable().clear();
  return success();
}

LogicalResult
mlir::lamina::foldConstantLayerOffsetBase(LinearLayerOpInterface layer) {
  APInt base;
  Value offsetBase = layer.getLayerOffsetBase();
  if (!offsetBase || !matchPattern(offsetBase, m_ConstantInt(&base)))
    return failure();
  layer.setLayerDropout(addToOffset(layer.getLayerDropout(), base));
  layer.setLayerOffsetBase(Value());
  return success();
}

namespace {
/// A constant offset_base (a block's call inlined) joins the attribute's
/// offset: the form every lowering and fusion takes.
struct DropoutConstantOffsetBase : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getOffsetBase() || !matchPattern(op.getOffsetBase(), m_Constant()))
      return failure();
    LogicalResult folded = failure();
    rewriter.modifyOpInPlace(op,
                             [&] { folded = op.foldConstantOffsetBase(); });
    return folded;
  }
};
} // namespace

void DropoutOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<DropoutAllToZeros, DropoutConstantOffsetBase>(context);
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (static_cast<int64_t>(getDim()) >= rank)
    return emitOpError("dim ")
           << getDim() << " is out of range for a value of rank " << rank;
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  int64_t rank = getOutput().getType().getRank();
  if (static_cast<int64_t>(getDim()) >= rank)
    return emitOpError("dim ")
           << getDim() << " is out of range for a value of rank " << rank;
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (getCotangent().getType() != inputType ||
      getInputGrad().getType() != inputType)
    return emitOpError("cotangent and input gradient must have the input's "
                       "type ")
           << inputType;
  if (inputType.getRank() < 1 ||
      ShapedType::isDynamic(inputType.getShape().back()))
    return emitOpError("needs a static normalized (last) dim, got ")
           << inputType;
  auto features = RankedTensorType::get({inputType.getShape().back()},
                                        inputType.getElementType());
  for (Value value : {getWeight(), getWeightGrad(), getBiasGrad()})
    if (value && value.getType() != features)
      return emitOpError("weight and parameter gradients must be ")
             << features << ", got " << value.getType();
  return success();
}

LogicalResult SyncOp::verify() {
  std::optional<int64_t> axis = getSpec().getAxis();
  int64_t rank = getInput().getType().getRank();
  if (axis && *axis >= rank)
    return emitOpError("sync axis ")
           << *axis << " is out of range for a value of rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Layer canonicalizations
//===----------------------------------------------------------------------===//

namespace {
/// A LinearWithSyncFunc without a sync function is an nn.Linear.
struct LinearWithoutSync : OpRewritePattern<LinearWithSyncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearWithSyncOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getSyncAttr())
      return failure();
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getType(), op.getPathAttr(),
                                          op.getInput(), op.getWeight(),
                                          op.getBias());
    return success();
  }
};

/// A LinearWithDropout whose dropout is inactive (eval mode or p = 0) is a
/// LinearWithSyncFunc with the same sync.
struct LinearWithInactiveDropout : OpRewritePattern<LinearWithDropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearWithDropoutOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getDropout().isActive())
      return failure();
    rewriter.replaceOpWithNewOp<LinearWithSyncOp>(
        op, op.getType(), op.getPathAttr(), op.getInput(), op.getWeight(),
        op.getSyncAttr(), op.getBias());
    return success();
  }
};

/// An inactive dropout step of a fused linear is dropped with its seed.
struct FusedLinearInactiveDropout : OpRewritePattern<FusedLinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedLinearOp op,
                                PatternRewriter &rewriter) const override {
    DropoutAttr dropout = op.getDropoutAttr();
    if (!dropout || dropout.isActive())
      return failure();
    rewriter.replaceOpWithNewOp<FusedLinearOp>(
        op, op.getType(), op.getPathAttr(), op.getInput(), op.getWeight(),
        op.getSyncAttr(), op.getBias(), op.getActivationAttr(),
        /*dropout=*/DropoutAttr(), /*seed=*/Value(), /*rank=*/Value(),
        /*offsetBase=*/Value(), op.getRopeCos(), op.getRopeSin());
    return success();
  }
};
} // namespace

void LinearWithSyncOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                   MLIRContext *context) {
  results.add<LinearWithoutSync>(context);
}

void LinearWithDropoutOp::getCanonicalizationPatterns(
    RewritePatternSet &results, MLIRContext *context) {
  results.add<LinearWithInactiveDropout>(context);
}

void FusedLinearOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                MLIRContext *context) {
  results.add<FusedLinearInactiveDropout>(context);
}
