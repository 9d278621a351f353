//===- GradientRules.cpp - Gradient layouts shared by several ops ---------===//

#include "lamina/Lamina/Analysis/GradientRules.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

std::string layout::describeLayer(StringRef path) {
  return path.empty() ? std::string("an unnamed layer")
                      : "layer '" + path.str() + "'";
}

FailureOr<MatmulGradients>
layout::matmulGradients(Operation *op, StringRef path, LayoutAttr x,
                        LayoutAttr w, const GradientLayout &dy, int64_t rank) {
  MLIRContext *context = op->getContext();
  int64_t last = rank - 1;
  if (isReplicated(w)) {
    // dx = dy·W keeps dy's layout; dW = Σ_rows dyᵀ·x is partial when the
    // rows are split over ranks.
    bool rowsSplit = isPartial(dy.layout) ||
                     (dy.layout.getKind() == LayoutKind::sharded &&
                      !isShardedOn(dy.layout, last)) ||
                     (x.getKind() == LayoutKind::sharded &&
                      !isShardedOn(x, last));
    return MatmulGradients{
        dy, {rowsSplit ? partial(context) : replicated(context),
             rowsSplit ? path.str() : std::string()}};
  }
  if (isShardedOn(w, 0)) {
    if (!isShardedOn(dy.layout, last) ||
        dy.layout.getGroups() != w.getGroups())
      return op->emitOpError("is column parallel but the gradient of its "
                             "output has layout ")
             << dy.layout << ", not " << sharded(context, last, w.getGroups());
    // dx = dy·W contracts the sharded features: partial sums.
    return MatmulGradients{{partial(context), path.str()},
                           {sharded(context, 0, w.getGroups()), ""}};
  }
  if (isShardedOn(w, 1)) {
    if (!isReplicated(dy.layout))
      return op->emitOpError("is row parallel but the gradient of its "
                             "output has layout ")
             << dy.layout << ", not R (reduce the forward's partial sums "
             << "with a fwd_post all_reduce)";
    return MatmulGradients{{sharded(context, last), ""},
                           {sharded(context, 1), ""}};
  }
  return op->emitOpError("has a weight layout ")
         << w << " without a backward layout rule";
}

FailureOr<GradientLayout> layout::syncGradient(Operation *op, StringRef path,
                                               SyncAttr spec,
                                               const GradientLayout &dy,
                                               GradientLayoutState &state) {
  MLIRContext *context = op->getContext();
  // An all_gather that leaves its transpose open takes the one its
  // gradient needs: whole on every rank → keep this rank's block.
  SyncAttr chosen = spec;
  if (spec.getCollective() == CollectiveKind::all_gather &&
      !spec.getTensorParallelOutputGrad()) {
    chosen = SyncAttr::get(context, spec.getMode(), spec.getCollective(),
                           spec.getAxis(), !isReplicated(dy.layout));
    state.deriveSync(op, chosen);
  }
  std::optional<Collective> backward = syncBackward(chosen);
  if (!backward)
    return dy; // the identity
  std::optional<int64_t> axis = backward->axis;
  auto wrong = [&](const Twine &needs) -> FailureOr<GradientLayout> {
    InFlightDiagnostic diag =
        op->emitOpError("sync ")
        << spec << " on " << describeLayer(path) << " transposes to "
        << stringifyCollectiveKind(backward->kind) << ", which needs "
        << needs << " gradients, but the gradient has layout " << dy.layout;
    if (spec.getMode() == SyncMode::bwd_post && isReplicated(dy.layout))
      diag << ": every rank already holds the whole gradient, which the "
              "all-reduce would multiply by the world size";
    if (backward->kind == CollectiveKind::reduce_scatter &&
        isReplicated(dy.layout))
      diag << ": every rank holds the whole gradient; with "
              "tensor_parallel_output_grad = false the backward keeps each "
              "rank's block instead";
    return diag;
  };
  switch (backward->kind) {
  case CollectiveKind::all_reduce:
    if (!isPartial(dy.layout))
      return wrong("partial (P)");
    return GradientLayout{replicated(context), ""};
  case CollectiveKind::reduce_scatter:
    if (!isPartial(dy.layout))
      return wrong("partial (P)");
    return GradientLayout{sharded(context, *axis), ""};
  case CollectiveKind::scatter:
    if (!isReplicated(dy.layout))
      return wrong("whole (R)");
    return GradientLayout{sharded(context, *axis), ""};
  case CollectiveKind::all_gather:
    if (!isShardedOn(dy.layout, *axis))
      return wrong("S(" + Twine(*axis) + ")");
    return GradientLayout{replicated(context), ""};
  }
  llvm_unreachable("unknown collective");
}

GradientLayout layout::rowsSumGradient(MLIRContext *context,
                                       const GradientLayout &dy, int64_t rank,
                                       StringRef path) {
  if (isShardedOn(dy.layout, rank - 1))
    return {sharded(context, 0, dy.layout.getGroups()), ""};
  if (isReplicated(dy.layout))
    return {replicated(context), ""};
  return {partial(context), path.str()}; // rows split over ranks, or P
}

LogicalResult layout::linearLayerGradients(LinearLayerOpInterface layer,
                                           GradientLayoutState &state) {
  GradientLayout dy = state.getGradient(layer->getResult(0));
  if (!dy.layout)
    return success();
  LinearLayerParts parts = layer.getLayerParts();
  if (!syncsActOn(state.getGridAxis()))
    parts.sync = {};
  StringRef path = parts.path.getValue();
  int64_t rank = cast<RankedTensorType>(parts.input.getType()).getRank();
  // Dropout and activation keep the layout.
  GradientLayout db;
  if (parts.bias)
    db = rowsSumGradient(layer->getContext(), dy, rank, path);
  bool onInput = parts.sync && parts.sync.getMode() == SyncMode::fwd_pre;
  if (parts.sync && !onInput) {
    FailureOr<GradientLayout> synced =
        syncGradient(layer, path, parts.sync, dy, state);
    if (failed(synced))
      return failure();
    dy = *synced;
  }
  LayoutAttr x = state.getForwardLayout(parts.input);
  if (onInput) {
    LayoutOrError gathered = syncForward(parts.sync, x);
    if (!gathered.failed())
      x = gathered.get();
  }
  FailureOr<MatmulGradients> grads = matmulGradients(
      layer, path, x, state.getForwardLayout(parts.weight), dy, rank);
  if (failed(grads))
    return failure();
  GradientLayout dx = grads->input;
  if (onInput) {
    FailureOr<GradientLayout> synced =
        syncGradient(layer, path, parts.sync, dx, state);
    if (failed(synced))
      return failure();
    dx = *synced;
  }
  if (failed(state.addGradient(layer, parts.input, dx)) ||
      failed(state.addGradient(layer, parts.weight, grads->weight)))
    return failure();
  return parts.bias ? state.addGradient(layer, parts.bias, db) : success();
}
