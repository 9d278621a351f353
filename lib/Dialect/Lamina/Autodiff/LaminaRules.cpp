//===- LaminaRules.cpp - Reverse-mode rules of lamina ops -----------------===//
//
// The vector-Jacobian products of the primitive pieces layers decompose
// into (lamina-generate-backward decomposes layers first), LayerNorm,
// softmax and fused QKV. For `y = x·Wᵀ`: `dx = dy·W`, `dW = dyᵀ·x` over all
// rows; dropout's backward is the same dropout (same seed, offset and rank:
// the forward mask, regenerated, never stored).
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaNumberFormatInterface.h"
#include "lamina/Lns/IR/Lns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

/// The cotangents of `y = x·Wᵀ` for x [..., K] and W [N, K].
std::pair<Value, Value> linearCotangents(OpBuilder &b, Location loc, Value x,
                                         Value w, Value dy, StringAttr path) {
  Value dx = MatmulOp::create(b, loc, x.getType(), dy,
                              buildTranspose2D(b, loc, w), path);
  Value rowsOfDy = buildFlattenRows(b, loc, dy);
  Value rowsOfX = buildFlattenRows(b, loc, x);
  Value dw = MatmulOp::create(b, loc, w.getType(),
                              buildTranspose2D(b, loc, rowsOfDy),
                              buildTranspose2D(b, loc, rowsOfX), path);
  return {dx, dw};
}

struct MatmulRule : Rule<MatmulRule, MatmulOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto matmul = cast<MatmulOp>(op);
    auto type = cast<RankedTensorType>(matmul.getType());
    Type element = type.getElementType();
    auto elementOf = [](Value value) {
      return cast<RankedTensorType>(value.getType()).getElementType();
    };
    // LNS layers (replace "lns") differentiate in LNS: the same products,
    // lowered to lns.linear's sequential sums, as the spec's rules give.
    // bf16/f16 layers are the GPU kernels' (f32 accumulation).
    if (!isa<Float32Type, BFloat16Type, Float16Type, lns::NumType>(element) ||
        elementOf(matmul.getInput()) != element ||
        elementOf(matmul.getWeight()) != element)
      return op->emitOpError("backward is generated for f32, bf16, f16 and "
                             "LNS layers of one element type, got ")
             << matmul.getInput().getType() << ", "
             << matmul.getWeight().getType() << " → " << type;
    auto [dx, dw] = linearCotangents(
        b, op->getLoc(), state.getPrimal(matmul.getInput()),
        state.getPrimal(matmul.getWeight()), dys[0], matmul.getPathAttr());
    dxs[0] = dx;
    dxs[1] = dw;
    return success();
  }
};

struct BiasAddRule : Rule<BiasAddRule, BiasAddOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = dys[0];
    dxs[1] = cast<NumberFormatTypeInterface>(
                 getElementTypeOrSelf(dys[0].getType()))
                 .buildGradientSumOverRows(b, op->getLoc(), dys[0]);
    return success();
  }
};

struct ActivationRule : Rule<ActivationRule, ActivationOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto activation = cast<ActivationOp>(op);
    dxs[0] = ActivationGradOp::create(
        b, op->getLoc(), activation.getType(), activation.getKindAttr(),
        state.getPrimal(activation.getInput()), dys[0],
        activation.getPathAttr());
    return success();
  }
};

struct DropoutRule : Rule<DropoutRule, DropoutOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto dropout = cast<DropoutOp>(op);
    Value seed = dropout.getSeed() ? state.getPrimal(dropout.getSeed()) : Value();
    Value rank = dropout.getRank() ? state.getPrimal(dropout.getRank()) : Value();
    Value offsetBase = dropout.getOffsetBase()
                           ? state.getPrimal(dropout.getOffsetBase())
                           : Value();
    dxs[0] = DropoutOp::create(b, op->getLoc(), dropout.getType(), dys[0],
                               dropout.getConfig(), seed, rank, offsetBase,
                               dropout.getPathAttr());
    return success();
  }
};

/// A sync: the identity in a program of one rank; in a partitioned program
/// (lamina-partition keeps only the bwd_post syncs for backward generation)
/// its backward collective.
struct SyncRule : Rule<SyncRule, SyncOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto sync = cast<SyncOp>(op);
    std::optional<int64_t> worldSize = getWorldSize(op);
    if (!worldSize || *worldSize == 1) {
      dxs[0] = dys[0];
      return success();
    }
    if (!isPartitioned(op) || sync.getSpec().getMode() != SyncMode::bwd_post)
      return op->emitOpError("backward of a sync across ")
             << *worldSize
             << " ranks before partitioning: lamina-generate-backward "
                "partitions sharded programs first";
    dxs[0] = buildSyncBackward(b, op->getLoc(), sync.getSpec(), dys[0],
                               sync.getInput().getType());
    return success();
  }
};

struct LayerNormRule : Rule<LayerNormRule, LayerNormOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto norm = cast<LayerNormOp>(op);
    Value weight = norm.getWeight() ? state.getPrimal(norm.getWeight())
                                    : Value();
    auto type = cast<RankedTensorType>(norm.getType());
    if (ShapedType::isDynamic(type.getShape().back()))
      return op->emitOpError("backward needs a static normalized (last) dim, "
                             "got ")
             << type;
    auto features = RankedTensorType::get({type.getShape().back()},
                                          type.getElementType());
    auto grad = LayerNormGradOp::create(
        b, op->getLoc(), TypeRange{type, features, features},
        state.getPrimal(norm.getInput()), dys[0], weight,
        norm.getEpsilonAttr());
    // Operands: input, then the optional weight and bias.
    dxs[0] = grad.getInputGrad();
    unsigned next = 1;
    if (norm.getWeight())
      dxs[next++] = grad.getWeightGrad();
    if (norm.getBias())
      dxs[next++] = grad.getBiasGrad();
    return success();
  }
};

struct SoftmaxRule : Rule<SoftmaxRule, SoftmaxOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto softmax = cast<SoftmaxOp>(op);
    dxs[0] = SoftmaxGradOp::create(b, op->getLoc(), softmax.getType(),
                                   state.getPrimal(softmax.getResult()),
                                   dys[0], softmax.getDimAttr());
    return success();
  }
};

/// q, k, v [..., heads, hd] interleaved as [..., heads, hd, 3] and viewed
/// as [..., 3·heads·hd]: the cotangent of the projection's output.
Value interleaveCotangents(OpBuilder &b, Location loc, ArrayRef<Value> dqkv,
                           RankedTensorType projected) {
  auto part = cast<RankedTensorType>(dqkv[0].getType());
  int64_t rank = part.getRank() + 1;
  SmallVector<int64_t> shape(part.getShape());
  shape.push_back(3);
  auto stackedType = RankedTensorType::get(shape, part.getElementType());
  MLIRContext *context = b.getContext();
  AffineMap partMap = AffineMap::getMultiDimIdentityMap(rank, context)
                          .dropResult(rank - 1);
  AffineMap outMap = AffineMap::getMultiDimIdentityMap(rank, context);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, shape, part.getElementType());
  Value stacked =
      linalg::GenericOp::create(
          b, loc, stackedType, dqkv, init,
          ArrayRef<AffineMap>{partMap, partMap, partMap, outMap}, iterators,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value t = linalg::IndexOp::create(nb, nloc, rank - 1);
            Value one = arith::ConstantIndexOp::create(nb, nloc, 1);
            Value zero = arith::ConstantIndexOp::create(nb, nloc, 0);
            Value isQ = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq,
                                              t, zero);
            Value isK = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq,
                                              t, one);
            Value kv = arith::SelectOp::create(nb, nloc, isK, args[1], args[2]);
            Value value = arith::SelectOp::create(nb, nloc, isQ, args[0], kv);
            linalg::YieldOp::create(nb, nloc, value);
          })
          .getResult(0);
  ReassociationIndices features = {rank - 3, rank - 2, rank - 1};
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank - 3; ++d)
    groups.push_back({d});
  groups.push_back(features);
  return tensor::CollapseShapeOp::create(b, loc, projected, stacked, groups);
}

struct FusedQKVRule : Rule<FusedQKVRule, FusedQKVOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto qkv = cast<FusedQKVOp>(op);
    auto inputType = cast<RankedTensorType>(qkv.getInput().getType());
    if (!inputType.getElementType().isF32())
      return op->emitOpError("backward is generated for f32 layers only, got ")
             << inputType;
    Location loc = op->getLoc();
    auto weightType = cast<RankedTensorType>(qkv.getWeight().getType());
    SmallVector<int64_t> shape(inputType.getShape().drop_back());
    shape.push_back(weightType.getDimSize(0));
    auto projected = RankedTensorType::get(shape, inputType.getElementType());
    Value dProjected = interleaveCotangents(b, loc, dys, projected);
    auto [dx, dw] =
        linearCotangents(b, loc, state.getPrimal(qkv.getInput()),
                         state.getPrimal(qkv.getWeight()), dProjected,
                         qkv.getPathAttr());
    dxs[0] = dx;
    dxs[1] = dw;
    dxs[2] = buildSumLeadingDims(b, loc, dProjected);
    return success();
  }
};
/// The weight's gradient: the cotangent's rows added into the rows they
/// were read from; the indices have none.
struct EmbeddingRule : Rule<EmbeddingRule, EmbeddingOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto embedding = cast<EmbeddingOp>(op);
    Value rank = embedding.getRank() ? state.getPrimal(embedding.getRank())
                                     : Value();
    auto grad = EmbeddingGradOp::create(
        b, op->getLoc(), embedding.getWeight().getType(),
        state.getPrimal(embedding.getInput()), dys[0],
        embedding.getPaddingIdxAttr(), embedding.getShardsAttr(), rank);
    // A weight declared vocabulary parallel gets its gradient in blocks
    // too: the partitioner reads the layout from the op.
    if (LayoutAttr layout = getDeclaredLayout(embedding.getWeight()))
      grad->setAttr(LaminaDialect::kLayoutAttrName, layout);
    dxs[1] = grad;
    return success();
  }
};

/// Filled elements are constants: their cotangent is zero.
struct MaskedFillRule : Rule<MaskedFillRule, MaskedFillOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto fill = cast<MaskedFillOp>(op);
    dxs[0] = MaskedFillOp::create(b, op->getLoc(), fill.getType(), dys[0],
                                  state.getPrimal(fill.getMask()),
                                  b.getF64FloatAttr(0.0), StringAttr());
    return success();
  }
};

/// A rotation's transpose is the rotation by the opposite angle:
/// dx = rope(dy, cos, −sin). The tables are constants where Lamina's
/// importer forms the op; their own gradients are not built.
struct RopeRule : Rule<RopeRule, RopeOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto rope = cast<RopeOp>(op);
    if (state.isActive(rope.getCos()) || state.isActive(rope.getSin()))
      return op->emitOpError("needs the gradient of its cos / sin tables, "
                             "which Lamina does not build: the tables must "
                             "not depend on what is differentiated");
    Location loc = op->getLoc();
    Value negSin = arith::NegFOp::create(b, loc, state.getPrimal(rope.getSin()));
    dxs[0] = RopeOp::create(b, loc, rope.getType(), dys[0],
                            state.getPrimal(rope.getCos()), negSin,
                            rope.getPairs(), StringAttr());
    return success();
  }
};

struct CrossEntropyRule : Rule<CrossEntropyRule, CrossEntropyOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto loss = cast<CrossEntropyOp>(op);
    dxs[0] = CrossEntropyGradOp::create(
        b, op->getLoc(), loss.getLogits().getType(),
        state.getPrimal(loss.getLogits()), state.getPrimal(loss.getTargets()),
        dys[0], loss.getIgnoreIndexAttr(), loss.getSumAttr(),
        loss.getNoneAttr(), loss.getShardsAttr(),
        loss.getRank() ? state.getPrimal(loss.getRank()) : Value());
    return success();
  }
};
} // namespace

void mlir::lamina::registerReverseDifferentiationModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, LaminaDialect *) {
    MatmulOp::attachInterface<MatmulRule>(*context);
    BiasAddOp::attachInterface<BiasAddRule>(*context);
    ActivationOp::attachInterface<ActivationRule>(*context);
    DropoutOp::attachInterface<DropoutRule>(*context);
    SyncOp::attachInterface<SyncRule>(*context);
    LayerNormOp::attachInterface<LayerNormRule>(*context);
    SoftmaxOp::attachInterface<SoftmaxRule>(*context);
    FusedQKVOp::attachInterface<FusedQKVRule>(*context);
    EmbeddingOp::attachInterface<EmbeddingRule>(*context);
    MaskedFillOp::attachInterface<MaskedFillRule>(*context);
    RopeOp::attachInterface<RopeRule>(*context);
    CrossEntropyOp::attachInterface<CrossEntropyRule>(*context);
  });
  registerUpstreamRules(registry);
  registerMathRules(registry);
  registerLnsRules(registry);
  registerLnsNetworkRules(registry);
  registerConvolutionRules(registry);
  registerCollectiveRules(registry);
  registerNumberFormatModels(registry);
}
