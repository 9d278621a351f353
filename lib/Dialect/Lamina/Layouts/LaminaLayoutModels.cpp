//===- LaminaLayoutModels.cpp - Layout rules of lamina ops ----------------===//
//
// Each lamina op's forward layout, gradient layouts and partition in one
// model; the rules they share (matmul, syncs, sums over rows) come from
// LayoutRules.h and GradientRules.h.
//
//===----------------------------------------------------------------------===//

#include "LayoutModels.h"

#include "lamina/Lamina/Analysis/Collectives.h"
#include "lamina/Lamina/Analysis/GradientRules.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

using namespace mlir::lamina::detail;

namespace {
StringRef pathOf(std::optional<StringRef> path) { return path.value_or(""); }

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// `check`'s reason as a rule's failure, else `layout`.
LayoutOrError unless(const Check &check, LayoutAttr layout) {
  return check ? LayoutOrError::error(*check) : LayoutOrError(layout);
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

/// The Slapo linear family and fused_linear: [sync] → matmul → [sync] →
/// bias → activation → dropout, each step checked forward and transposed
/// backward. Partitioning takes their decomposed pieces.
template <typename Op>
struct LinearLayerRules : Rules<LinearLayerRules<Op>, Op> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    LinearLayerParts parts = cast<LinearLayerOpInterface>(op).getLayerParts();
    return linearLayerLayout(
        parts, state.getLayout(parts.input), state.getLayout(parts.weight),
        parts.bias ? state.getLayout(parts.bias) : LayoutAttr(),
        state.getGridAxis());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    return linearLayerGradients(cast<LinearLayerOpInterface>(op), state);
  }
  LogicalResult partition(Operation *op, PartitionState &) const {
    return op->emitOpError("is a layer; partitioning needs decomposed "
                           "layers (run lamina-decompose first)");
  }
};

struct MatmulRules : Rules<MatmulRules, MatmulOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto matmul = cast<MatmulOp>(op);
    return matmulLayout(state.getLayout(matmul.getInput()),
                        state.getLayout(matmul.getWeight()),
                        rankOf(matmul.getInput()));
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto matmul = cast<MatmulOp>(op);
    FailureOr<MatmulGradients> grads = matmulGradients(
        op, pathOf(matmul.getPath()),
        state.getForwardLayout(matmul.getInput()),
        state.getForwardLayout(matmul.getWeight()),
        state.getGradient(matmul.getResult()), rankOf(matmul.getInput()));
    if (failed(grads))
      return failure();
    return success(
        succeeded(state.addGradient(op, matmul.getInput(), grads->input)) &&
        succeeded(state.addGradient(op, matmul.getWeight(), grads->weight)));
  }
};

struct BiasAddRules : Rules<BiasAddRules, BiasAddOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto biasAdd = cast<BiasAddOp>(op);
    LayoutAttr in = state.getLayout(biasAdd.getInput());
    return unless(checkBias(in, state.getLayout(biasAdd.getBias()),
                            biasAdd.getType().getRank(),
                            pathOf(biasAdd.getPath())),
                  in);
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto biasAdd = cast<BiasAddOp>(op);
    GradientLayout dy = state.getGradient(biasAdd.getResult());
    return success(
        succeeded(state.addGradient(op, biasAdd.getInput(), dy)) &&
        succeeded(state.addGradient(
            op, biasAdd.getBias(),
            rowsSumGradient(op->getContext(), dy, biasAdd.getType().getRank(),
                            pathOf(biasAdd.getPath())))));
  }
};

struct ActivationRules : Rules<ActivationRules, ActivationOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto activation = cast<ActivationOp>(op);
    LayoutAttr in = state.getLayout(activation.getInput());
    return unless(checkNotPartial(in, "applies an activation to",
                                  pathOf(activation.getPath())),
                  in);
  }
};

struct DropoutRules : Rules<DropoutRules, DropoutOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto dropout = cast<DropoutOp>(op);
    LayoutAttr in = state.getLayout(dropout.getInput());
    if (Check partialSums = checkNotPartial(in, "applies dropout to",
                                            pathOf(dropout.getPath())))
      return LayoutOrError::error(*partialSums);
    return unless(checkDropout(dropout.getConfig(), in, state.getGridAxis()),
                  in);
  }
  /// A sharded mask is the whole mask's block: the dropout learns the axis
  /// and the rank keying the elements' global indices.
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto dropout = cast<DropoutOp>(op);
    dropout.getResult().setType(dropout.getInput().getType());
    DropoutAttr config = dropout.getConfig();
    if (!config.isActive())
      return success();
    LayoutAttr layout = state.getLayout(dropout.getInput());
    if (isSharded(layout) && layout.getGroups() != 1)
      return dropout.emitOpError("drops a value sharded in ")
             << layout.getGroups()
             << " groups, whose elements have no contiguous place per rank; "
                "slice the groups apart first";
    if (config.getForkRng()) {
      dropout.getRankMutable().assign(state.getRank());
      return success();
    }
    if (!isSharded(layout))
      return success(); // replicated: the same mask on every rank
    dropout.setConfigAttr(DropoutAttr::get(
        dropout.getContext(), config.getP(), config.getTraining(),
        config.getOffset(), /*forkRng=*/false, *layout.getAxis(),
        state.getWorldSize()));
    dropout.getRankMutable().assign(state.getRank());
    return success();
  }
};

/// A reduction over the data axis: there, each replica's value (partial
/// sums, or a replicated value the mean leaves as it is) becomes the whole
/// sum; values sharded over the replicas have no sum. Every other axis keeps
/// its layout.
struct ReduceReplicasRules : Rules<ReduceReplicasRules, ReduceReplicasOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    LayoutAttr in = state.getLayout(cast<ReduceReplicasOp>(op).getInput());
    if (state.getGridAxis() != LaminaDialect::kDataAxisName)
      return in;
    if (isSharded(in)) {
      std::string reason;
      llvm::raw_string_ostream(reason)
          << "sums the replicas of a value sharded over them (layout " << in
          << "): each replica holds a different block, not a term of the sum";
      return LayoutOrError::error(reason);
    }
    return replicated(op->getContext());
  }
};

/// Whether `sync` is an all-reduce of mode `mode` that a model's code
/// calls (lamina.as_written): it sums whatever it is given.
static bool isAllReduceAsWritten(SyncOp sync, SyncMode mode) {
  return sync->hasAttr(LaminaDialect::kAsWrittenAttrName) &&
         sync.getSpec().getMode() == mode &&
         sync.getSpec().getCollective() == CollectiveKind::all_reduce;
}

struct SyncRules : Rules<SyncRules, SyncOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto sync = cast<SyncOp>(op);
    LayoutAttr in = state.getLayout(sync.getInput());
    if (!syncsActOn(state.getGridAxis()))
      return in;
    // The sum of identical replicas is replicated.
    if (isReplicated(in) && isAllReduceAsWritten(sync, SyncMode::fwd_post))
      return in;
    return syncLayout(sync.getSpec(), in, pathOf(sync.getPath()));
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto sync = cast<SyncOp>(op);
    GradientLayout dy = state.getGradient(sync.getResult());
    if (!syncsActOn(state.getGridAxis()))
      return state.addGradient(op, sync.getInput(), dy);
    if (isReplicated(dy.layout) &&
        isAllReduceAsWritten(sync, SyncMode::bwd_post))
      return state.addGradient(op, sync.getInput(), dy);
    FailureOr<GradientLayout> dx =
        syncGradient(op, pathOf(sync.getPath()), sync.getSpec(),
                     state.getGradient(sync.getResult()), state);
    return failed(dx) ? failure() : state.addGradient(op, sync.getInput(), *dx);
  }
  /// The collective itself; a bwd_post sync is the identity forward (kept
  /// for backward generation to transpose).
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto sync = cast<SyncOp>(op);
    Value input = sync.getInput();
    if (sync.getSpec().getMode() == SyncMode::bwd_post) {
      if (state.keepsBackwardSyncs())
        sync.getResult().setType(cast<RankedTensorType>(input.getType()));
      else
        state.replace(sync, input);
      return success();
    }
    CollectiveKind collective = sync.getSpec().getCollective();
    bool reduces = collective == CollectiveKind::all_reduce ||
                   collective == CollectiveKind::reduce_scatter;
    if (reduces && !isa<FloatType>(sync.getType().getElementType()))
      return sync.emitOpError("reduces partial sums of ")
             << sync.getType().getElementType()
             << " across ranks, but MPI can only add floats: an LNS sum is "
                "an LNS addition. Shard LNS layers by columns (no partial "
                "sums) or keep them replicated";
    OpBuilder &builder = state.getBuilder();
    builder.setInsertionPoint(sync);
    auto resultType = state.getLocalType(sync.getType(),
                                         state.getLayout(sync.getResult()));
    Value replacement = buildCollective(
        builder, sync.getLoc(), {collective, sync.getSpec().getAxis()}, input,
        resultType);
    if (state.keepsBackwardSyncs())
      replacement.getDefiningOp()->setAttr(LaminaDialect::kFromSyncAttrName,
                                           sync.getSpec());
    state.replace(sync, replacement);
    return success();
  }
};

struct FusedQkvRules : Rules<FusedQkvRules, FusedQKVOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto qkv = cast<FusedQKVOp>(op);
    return fusedQkvLayout(state.getLayout(qkv.getInput()),
                          state.getLayout(qkv.getWeight()),
                          state.getLayout(qkv.getBias()),
                          rankOf(qkv.getQ()) - 2);
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto qkv = cast<FusedQKVOp>(op);
    int64_t rank = rankOf(qkv.getInput());
    // The projection's output gradient is sharded like q, k, v.
    LayoutAttr out = isShardedOn(state.getForwardLayout(qkv.getWeight()), 0)
                         ? sharded(op->getContext(), rank - 1)
                         : replicated(op->getContext());
    GradientLayout projected{out, ""};
    FailureOr<MatmulGradients> grads = matmulGradients(
        op, qkv.getPath(), state.getForwardLayout(qkv.getInput()),
        state.getForwardLayout(qkv.getWeight()), projected, rank);
    if (failed(grads))
      return failure();
    return success(
        succeeded(state.addGradient(op, qkv.getInput(), grads->input)) &&
        succeeded(state.addGradient(op, qkv.getWeight(), grads->weight)) &&
        succeeded(state.addGradient(
            op, qkv.getBias(),
            rowsSumGradient(op->getContext(), projected, rank,
                            qkv.getPath()))));
  }
  /// Each rank projects its heads.
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto qkv = cast<FusedQKVOp>(op);
    LayoutAttr layout = state.getLayout(qkv.getQ());
    if (!isSharded(layout))
      return success();
    int64_t worldSize = state.getWorldSize();
    if (qkv.getNumHeads() % worldSize != 0)
      return qkv.emitOpError("has ")
             << qkv.getNumHeads() << " heads, which " << worldSize
             << " ranks cannot share evenly";
    qkv.setWorldSize(worldSize);
    for (Value result : qkv->getResults())
      result.setType(state.getLocalType(result.getType(), layout));
    return success();
  }
};

struct LayerNormRules : Rules<LayerNormRules, LayerNormOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto norm = cast<LayerNormOp>(op);
    Value weight = norm.getWeight(), bias = norm.getBias();
    return layerNormLayout(state.getLayout(norm.getInput()),
                           weight ? state.getLayout(weight) : LayoutAttr(),
                           bias ? state.getLayout(bias) : LayoutAttr(),
                           rankOf(norm.getInput()), norm.getPath());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto norm = cast<LayerNormOp>(op);
    GradientLayout dy = state.getGradient(norm.getResult());
    // Σ over rows of a whole gradient is whole; of a row-sharded one,
    // partial.
    GradientLayout params =
        isReplicated(dy.layout)
            ? GradientLayout{replicated(op->getContext()), ""}
            : GradientLayout{partial(op->getContext()), norm.getPath().str()};
    LogicalResult result = state.addGradient(op, norm.getInput(), dy);
    for (Value parameter : {norm.getWeight(), norm.getBias()})
      if (parameter && succeeded(result))
        result = state.addGradient(op, parameter, params);
    return result;
  }
};

struct SoftmaxRules : Rules<SoftmaxRules, SoftmaxOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto softmax = cast<SoftmaxOp>(op);
    return softmaxLayout(state.getLayout(softmax.getInput()),
                         softmax.getDim(), pathOf(softmax.getPath()));
  }
};

//===----------------------------------------------------------------------===//
// Whole models: embeddings, masks, the loss
//===----------------------------------------------------------------------===//

/// Each rank of a vocabulary-parallel op learns the world's size and its
/// rank (its block of the vocabulary).
template <typename Op>
void markVocabularyParallel(Op op, PartitionState &state) {
  op.setShardsAttr(state.getBuilder().getI64IntegerAttr(state.getWorldSize()));
  op.getRankMutable().assign(state.getRank());
}

struct EmbeddingRules : Rules<EmbeddingRules, EmbeddingOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto embedding = cast<EmbeddingOp>(op);
    return embeddingLayout(state.getLayout(embedding.getInput()),
                           state.getLayout(embedding.getWeight()),
                           embedding.getPath());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto embedding = cast<EmbeddingOp>(op);
    GradientLayout dy = state.getGradient(embedding.getResult());
    // Every rank adds the whole cotangent's rows into its block of the
    // vocabulary (or the whole weight).
    if (!isReplicated(dy.layout))
      return op->emitOpError("has a gradient with layout ")
             << dy.layout << "; an embedding's gradient must be whole";
    return state.addGradient(
        op, embedding.getWeight(),
        {state.getForwardLayout(embedding.getWeight()), ""});
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto embedding = cast<EmbeddingOp>(op);
    if (isSharded(state.getLayout(embedding.getWeight())))
      markVocabularyParallel(embedding, state);
    return success();
  }
};

struct EmbeddingGradRules : Rules<EmbeddingGradRules, EmbeddingGradOp> {
  /// The layout declared on the op (its weight's), from replicated indices
  /// and cotangents.
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto grad = cast<EmbeddingGradOp>(op);
    for (Value operand : {grad.getInput(), grad.getCotangent()}) {
      LayoutAttr layout = state.getLayout(operand);
      if (!isReplicated(layout)) {
        std::string reason;
        llvm::raw_string_ostream(reason)
            << "takes " << layout
            << " indices or cotangents; an embedding's gradient needs them "
               "replicated";
        return LayoutOrError::error(reason);
      }
    }
    auto declared =
        grad->getAttrOfType<LayoutAttr>(LaminaDialect::kLayoutAttrName);
    return declared ? declared : replicated(op->getContext());
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto grad = cast<EmbeddingGradOp>(op);
    LayoutAttr layout = state.getLayout(grad.getResult());
    if (isSharded(layout)) {
      markVocabularyParallel(grad, state);
      grad.getResult().setType(state.getLocalType(grad.getType(), layout));
    }
    grad->removeAttr(LaminaDialect::kLayoutAttrName);
    return success();
  }
};

struct CrossEntropyRules : Rules<CrossEntropyRules, CrossEntropyOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto loss = cast<CrossEntropyOp>(op);
    return crossEntropyLayout(state.getLayout(loss.getLogits()),
                              state.getLayout(loss.getTargets()),
                              pathOf(loss.getPath()));
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto loss = cast<CrossEntropyOp>(op);
    GradientLayout dy = state.getGradient(loss.getResult());
    // Each rank's logits block gets its block of the gradient: the
    // softmax's row statistics are whole on every rank.
    if (!isReplicated(dy.layout))
      return op->emitOpError("has a gradient with layout ")
             << dy.layout << "; a loss's gradient must be whole";
    return state.addGradient(op, loss.getLogits(),
                             {state.getForwardLayout(loss.getLogits()), ""});
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto loss = cast<CrossEntropyOp>(op);
    if (isSharded(state.getLayout(loss.getLogits())))
      markVocabularyParallel(loss, state);
    return success();
  }
};

struct MaskedFillRules : Rules<MaskedFillRules, MaskedFillOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto fill = cast<MaskedFillOp>(op);
    return maskedFillLayout(state.getLayout(fill.getInput()),
                            state.getLayout(fill.getMask()),
                            fill.getMask().getType().getShape());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto fill = cast<MaskedFillOp>(op);
    return state.addGradient(op, fill.getInput(),
                             state.getGradient(fill.getResult()));
  }
};

struct RopeRules : Rules<RopeRules, RopeOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto rope = cast<RopeOp>(op);
    return ropeLayout(state.getLayout(rope.getInput()),
                      state.getLayout(rope.getCos()),
                      state.getLayout(rope.getSin()),
                      rope.getCos().getType().getShape());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto rope = cast<RopeOp>(op);
    return state.addGradient(op, rope.getInput(),
                             state.getGradient(rope.getResult()));
  }
  /// The result takes the input's per-rank shape; the tables stay whole
  /// (broadcast along the sharded axis, ropeLayout checked it).
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto rope = cast<RopeOp>(op);
    rope.getResult().setType(rope.getInput().getType());
    return success();
  }
};

template <typename... Ops>
void attachLinearLayerRules(MLIRContext *context) {
  (Ops::template attachInterface<LinearLayerRules<Ops>>(*context), ...);
}
} // namespace

void mlir::lamina::detail::registerLaminaLayoutModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, LaminaDialect *) {
    attachLinearLayerRules<LinearOp, LinearWithSeparateBiasOp,
                           LinearWithSyncOp, LinearWithActOp,
                           LinearWithDropoutOp, FusedLinearOp>(context);
    MatmulOp::attachInterface<MatmulRules>(*context);
    BiasAddOp::attachInterface<BiasAddRules>(*context);
    ActivationOp::attachInterface<ActivationRules>(*context);
    DropoutOp::attachInterface<DropoutRules>(*context);
    SyncOp::attachInterface<SyncRules>(*context);
    ReduceReplicasOp::attachInterface<ReduceReplicasRules>(*context);
    FusedQKVOp::attachInterface<FusedQkvRules>(*context);
    LayerNormOp::attachInterface<LayerNormRules>(*context);
    SoftmaxOp::attachInterface<SoftmaxRules>(*context);
    EmbeddingOp::attachInterface<EmbeddingRules>(*context);
    EmbeddingGradOp::attachInterface<EmbeddingGradRules>(*context);
    CrossEntropyOp::attachInterface<CrossEntropyRules>(*context);
    MaskedFillOp::attachInterface<MaskedFillRules>(*context);
    RopeOp::attachInterface<RopeRules>(*context);
  });
}
