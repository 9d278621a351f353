//===- GradientLayouts.cpp - Layouts of the backward pass -----------------===//

#include "lamina/Lamina/Analysis/GradientLayouts.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

namespace {
/// A gradient's layout and, for partial sums, the layer they come from.
struct Gradient {
  LayoutAttr layout;
  std::string origin;
};

/// The transposed rule of `x·Wᵀ`: the layouts of dx and dW for the forward
/// layouts of x and W and the layout of dy; `path` names the layer.
struct MatmulGradients {
  Gradient input, weight;
};

template <typename... Parts>
std::string text(const Parts &...parts) {
  std::string result;
  llvm::raw_string_ostream os(result);
  (os << ... << parts);
  return result;
}

std::string describeLayer(StringRef path) {
  return path.empty() ? std::string("an unnamed layer")
                      : "layer '" + path.str() + "'";
}

class GradientChecker {
public:
  GradientChecker(func::FuncOp function,
                  const DenseMap<Value, LayoutAttr> &forward)
      : function(function), forward(forward),
        context(function.getContext()) {}

  LogicalResult run();
  SmallVector<DerivedSync> derivedSyncs;

  DenseMap<Value, LayoutAttr> takeLayouts() {
    DenseMap<Value, LayoutAttr> result;
    for (auto &[value, gradient] : gradients)
      result[value] = gradient.layout;
    return result;
  }

private:
  LayoutAttr fwd(Value value) const {
    LayoutAttr layout = forward.lookup(value);
    return layout ? layout : replicated(context);
  }
  int64_t rankOf(Value value) const {
    return cast<RankedTensorType>(value.getType()).getRank();
  }
  LogicalResult add(Operation *at, Value value, Gradient gradient);
  FailureOr<MatmulGradients> matmul(Operation *op, StringRef path,
                                    LayoutAttr x, LayoutAttr w, Gradient dy,
                                    int64_t rank);
  FailureOr<Gradient> sync(Operation *op, StringRef path, SyncAttr spec,
                           Gradient dy);
  Gradient rowsSum(Gradient dy, int64_t rank, StringRef path);
  LogicalResult visitLayer(LinearLayerOpInterface layer);
  LogicalResult visit(Operation *op);

  func::FuncOp function;
  const DenseMap<Value, LayoutAttr> &forward;
  MLIRContext *context;
  DenseMap<Value, Gradient> gradients;
  /// Arguments that are layer parameters (weights, biases).
  llvm::SmallPtrSet<Value, 8> parameters;
};
} // namespace

LogicalResult GradientChecker::add(Operation *at, Value value,
                                   Gradient gradient) {
  if (!gradient.layout)
    return success();
  auto [it, inserted] = gradients.try_emplace(value, gradient);
  if (inserted || it->second.layout == gradient.layout)
    return success();
  // Two contributions of different layouts cannot be summed as they are.
  const Gradient &first = it->second;
  const Gradient *partialOne = isPartial(first.layout)      ? &first
                               : isPartial(gradient.layout) ? &gradient
                                                            : nullptr;
  InFlightDiagnostic diag =
      at->emitOpError("the gradient of its operand sums ")
      << first.layout << " and " << gradient.layout << " contributions";
  if (partialOne)
    diag << ": the partial sums come from " << describeLayer(partialOne->origin)
         << "; add sync(\"bwd_post\", \"all_reduce\") on the input of "
         << describeLayer(partialOne->origin);
  return diag;
}

FailureOr<MatmulGradients>
GradientChecker::matmul(Operation *op, StringRef path, LayoutAttr x,
                        LayoutAttr w, Gradient dy, int64_t rank) {
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

FailureOr<Gradient> GradientChecker::sync(Operation *op, StringRef path,
                                          SyncAttr spec, Gradient dy) {
  // An all_gather that leaves its transpose open takes the one its
  // gradient needs: whole on every rank → keep this rank's block.
  SyncAttr chosen = spec;
  bool derive = spec.getCollective() == CollectiveKind::all_gather &&
                !spec.getTensorParallelOutputGrad();
  if (derive) {
    chosen = SyncAttr::get(context, spec.getMode(), spec.getCollective(),
                           spec.getAxis(), !isReplicated(dy.layout));
    derivedSyncs.push_back({op, chosen});
  }
  std::optional<Collective> backward = syncBackward(chosen);
  if (!backward)
    return dy; // the identity
  std::optional<int64_t> axis = backward->axis;
  auto wrong = [&](StringRef needs) -> FailureOr<Gradient> {
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
    return Gradient{replicated(context), ""};
  case CollectiveKind::reduce_scatter:
    if (!isPartial(dy.layout))
      return wrong("partial (P)");
    return Gradient{sharded(context, *axis), ""};
  case CollectiveKind::scatter:
    if (!isReplicated(dy.layout))
      return wrong("whole (R)");
    return Gradient{sharded(context, *axis), ""};
  case CollectiveKind::all_gather:
    if (!isShardedOn(dy.layout, *axis))
      return wrong(text("S(", *axis, ")"));
    return Gradient{replicated(context), ""};
  }
  llvm_unreachable("unknown collective");
}

Gradient GradientChecker::rowsSum(Gradient dy, int64_t rank, StringRef path) {
  if (isShardedOn(dy.layout, rank - 1))
    return {sharded(context, 0, dy.layout.getGroups()), ""};
  if (isReplicated(dy.layout))
    return {replicated(context), ""};
  return {partial(context), path.str()}; // rows split over ranks, or P
}

LogicalResult GradientChecker::visitLayer(LinearLayerOpInterface layer) {
  auto it = gradients.find(layer->getResult(0));
  if (it == gradients.end())
    return success();
  LinearLayerParts parts = layer.getLayerParts();
  StringRef path = parts.path.getValue();
  int64_t rank = rankOf(parts.input);
  Gradient dy = it->second; // dropout and activation keep the layout
  Gradient db;
  if (parts.bias)
    db = rowsSum(dy, rank, path);
  bool onInput = parts.sync && parts.sync.getMode() == SyncMode::fwd_pre;
  if (parts.sync && !onInput) {
    FailureOr<Gradient> synced = sync(layer, path, parts.sync, dy);
    if (failed(synced))
      return failure();
    dy = *synced;
  }
  LayoutAttr x = fwd(parts.input);
  if (onInput) {
    LayoutOrError gathered = syncForward(parts.sync, x);
    if (!gathered.failed())
      x = gathered.get();
  }
  FailureOr<MatmulGradients> grads =
      matmul(layer, path, x, fwd(parts.weight), dy, rank);
  if (failed(grads))
    return failure();
  Gradient dx = grads->input;
  if (onInput) {
    FailureOr<Gradient> synced = sync(layer, path, parts.sync, dx);
    if (failed(synced))
      return failure();
    dx = *synced;
  }
  if (failed(add(layer, parts.input, dx)) ||
      failed(add(layer, parts.weight, grads->weight)))
    return failure();
  return parts.bias ? add(layer, parts.bias, db) : success();
}

LogicalResult GradientChecker::visit(Operation *op) {
  if (auto layer = dyn_cast<LinearLayerOpInterface>(op))
    return visitLayer(layer);
  if (llvm::none_of(op->getResults(),
                    [&](Value result) { return gradients.count(result); }))
    return success();
  Gradient dy = gradients.lookup(op->getResult(0));
  auto path = [&](std::optional<StringRef> p) { return p.value_or(""); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MatmulOp matmul) {
        FailureOr<MatmulGradients> grads =
            this->matmul(op, path(matmul.getPath()), fwd(matmul.getInput()),
                         fwd(matmul.getWeight()), dy,
                         rankOf(matmul.getInput()));
        if (failed(grads))
          return failure();
        return success(succeeded(add(op, matmul.getInput(), grads->input)) &&
                       succeeded(add(op, matmul.getWeight(), grads->weight)));
      })
      .Case([&](BiasAddOp biasAdd) {
        return success(
            succeeded(add(op, biasAdd.getInput(), dy)) &&
            succeeded(add(op, biasAdd.getBias(),
                          rowsSum(dy, biasAdd.getType().getRank(),
                                  path(biasAdd.getPath())))));
      })
      .Case([&](SyncOp syncOp) {
        FailureOr<Gradient> dx =
            sync(op, path(syncOp.getPath()), syncOp.getSpec(), dy);
        return failed(dx) ? failure() : add(op, syncOp.getInput(), *dx);
      })
      .Case([&](FusedQKVOp qkv) {
        // The projection's output gradient is sharded like q, k, v.
        LayoutAttr out = isShardedOn(fwd(qkv.getWeight()), 0)
                             ? sharded(context, rankOf(qkv.getInput()) - 1)
                             : replicated(context);
        Gradient projected{out, ""};
        FailureOr<MatmulGradients> grads =
            matmul(op, qkv.getPath(), fwd(qkv.getInput()),
                   fwd(qkv.getWeight()), projected, rankOf(qkv.getInput()));
        if (failed(grads))
          return failure();
        return success(
            succeeded(add(op, qkv.getInput(), grads->input)) &&
            succeeded(add(op, qkv.getWeight(), grads->weight)) &&
            succeeded(add(op, qkv.getBias(),
                          rowsSum(projected, rankOf(qkv.getInput()),
                                  qkv.getPath()))));
      })
      .Case([&](LayerNormOp norm) {
        // Σ over rows of a whole gradient is whole; of a row-sharded one,
        // partial.
        Gradient params = isReplicated(dy.layout)
                     ? Gradient{replicated(context), ""}
                     : Gradient{partial(context), norm.getPath().str()};
        LogicalResult result = add(op, norm.getInput(), dy);
        for (Value parameter : {norm.getWeight(), norm.getBias()})
          if (parameter && succeeded(result))
            result = add(op, parameter, params);
        return result;
      })
      .Case([&](tensor::CollapseShapeOp collapse) -> LogicalResult {
        if (isPartial(dy.layout))
          return add(op, collapse.getSrc(), dy);
        LayoutOrError dx =
            expandLayout(dy.layout, collapse.getReassociationIndices(),
                         collapse.getSrcType().getShape());
        return dx.failed() ? op->emitOpError(dx.getReason())
                           : add(op, collapse.getSrc(), {dx.get(), ""});
      })
      .Case([&](tensor::ExpandShapeOp expand) -> LogicalResult {
        if (isPartial(dy.layout))
          return add(op, expand.getSrc(), dy);
        LayoutOrError dx =
            collapseLayout(dy.layout, expand.getReassociationIndices(),
                           expand.getResultType().getShape());
        return dx.failed() ? op->emitOpError(dx.getReason())
                           : add(op, expand.getSrc(), {dx.get(), ""});
      })
      .Case([&](tensor::ExtractSliceOp slice) -> LogicalResult {
        // The cotangent placed in zeros: blocked like the forward source
        // when blocked like the forward slice.
        if (dy.layout == fwd(slice.getResult()))
          return add(op, slice.getSource(), {fwd(slice.getSource()), ""});
        return op->emitOpError("has no backward layout rule for its "
                               "gradient ")
               << dy.layout << " (the forward slice has layout "
               << fwd(slice.getResult()) << ")";
      })
      .Case([&](linalg::TransposeOp transpose) -> LogicalResult {
        ArrayRef<int64_t> permutation = transpose.getPermutation();
        SmallVector<int64_t> inverse(permutation.size());
        for (auto [i, source] : llvm::enumerate(permutation))
          inverse[source] = i;
        LayoutOrError dx = transposeLayout(dy.layout, inverse);
        if (dx.failed())
          return isPartial(dy.layout) ? add(op, transpose.getInput(), dy)
                                      : op->emitOpError(dx.getReason());
        return add(op, transpose.getInput(), {dx.get(), dy.origin});
      })
      .Case([&](linalg::BatchMatmulOp matmul) -> LogicalResult {
        // dA = dC·Bᵀ and dB = Aᵀ·dC per batch: the batch's layout.
        for (Value input : matmul.getDpsInputs())
          if (failed(add(op, input, dy)))
            return failure();
        return success();
      })
      .Case([&](MaskedFillOp fill) {
        return add(op, fill.getInput(), dy);
      })
      .Case([&](CrossEntropyOp loss) -> LogicalResult {
        // Each rank's logits block gets its block of the gradient: the
        // softmax's row statistics are whole on every rank.
        if (!isReplicated(dy.layout))
          return op->emitOpError("has a gradient with layout ")
                 << dy.layout << "; a loss's gradient must be whole";
        return add(op, loss.getLogits(), {fwd(loss.getLogits()), ""});
      })
      .Case([&](EmbeddingOp embedding) -> LogicalResult {
        // Every rank adds the whole cotangent's rows into its block of
        // the vocabulary (or the whole weight).
        if (!isReplicated(dy.layout))
          return op->emitOpError("has a gradient with layout ")
                 << dy.layout << "; an embedding's gradient must be whole";
        return add(op, embedding.getWeight(),
                   {fwd(embedding.getWeight()), ""});
      })
      .Default([&](Operation *other) -> LogicalResult {
        // Element-wise ops (the only ones the forward rules let sharded
        // values through): every float tensor operand of the result's shape
        // gets the result's gradient.
        for (Value operand : other->getOperands()) {
          auto type = dyn_cast<RankedTensorType>(operand.getType());
          if (!type || !isa<FloatType>(type.getElementType()))
            continue;
          if (type != other->getResult(0).getType()) {
            // Whole values (a reduction, a broadcast, a loss of whole
            // logits): every rank pulls the cotangent back through the same
            // Jacobian, so the operand's gradient is whole where the
            // result's is, and partial sums (of the same origin) where the
            // result's are.
            if ((isReplicated(dy.layout) || isPartial(dy.layout)) &&
                isReplicated(fwd(other->getResult(0))) &&
                isReplicated(fwd(operand))) {
              if (failed(add(other, operand, dy)))
                return failure();
              continue;
            }
            return other->emitOpError("has no backward layout rule for its "
                                      "sharded gradient ")
                   << dy.layout;
          }
          if (failed(add(other, operand, dy)))
            return failure();
        }
        return success();
      });
}

LogicalResult GradientChecker::run() {
  Block &body = function.getBody().front();
  parameters = getLayerParameters(function);
  Operation *terminator = body.getTerminator();
  for (Value result : terminator->getOperands())
    if (isa<RankedTensorType>(result.getType()) &&
        failed(add(terminator, result, {fwd(result), ""})))
      return failure();
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (failed(visit(&op)))
      return failure();
  // A program input's gradient must be whole or blocks; a parameter's may be
  // partial (it is all-reduced with the other parameter gradients).
  for (BlockArgument argument : body.getArguments()) {
    auto it = gradients.find(argument);
    if (it == gradients.end() || !isPartial(it->second.layout) ||
        parameters.contains(argument))
      continue;
    return function.emitOpError("the gradient of argument ")
           << argument.getArgNumber()
           << " would be partial sums (layout P) on each rank, coming from "
           << describeLayer(it->second.origin)
           << "; add sync(\"bwd_post\", \"all_reduce\") on the input of "
           << describeLayer(it->second.origin);
  }
  return success();
}

llvm::SmallPtrSet<Value, 8>
mlir::lamina::getLayerParameters(func::FuncOp function) {
  llvm::SmallPtrSet<Value, 8> parameters;
  auto add = [&](Value value) {
    if (value && isa<BlockArgument>(value))
      parameters.insert(value);
  };
  function.walk([&](Operation *op) {
    if (auto layer = dyn_cast<LayerOpInterface>(op)) {
      for (StringRef name : {"weight", "bias"})
        add(layer.getLayerOperand(name));
    } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
      add(matmul.getWeight()); // a decomposed layer's pieces
    } else if (auto biasAdd = dyn_cast<BiasAddOp>(op)) {
      add(biasAdd.getBias());
    }
  });
  return parameters;
}

FailureOr<DenseMap<Value, LayoutAttr>>
mlir::lamina::inferGradientLayouts(func::FuncOp function,
                                   const DenseMap<Value, LayoutAttr> &layouts,
                                   SmallVectorImpl<DerivedSync> *derived) {
  GradientChecker checker(function, layouts);
  if (failed(checker.run()))
    return failure();
  if (derived)
    llvm::append_range(*derived, checker.derivedSyncs);
  return checker.takeLayouts();
}

void mlir::lamina::applyDerivedSyncs(ArrayRef<DerivedSync> derived) {
  for (const DerivedSync &sync : derived) {
    if (auto syncOp = dyn_cast<SyncOp>(sync.op))
      syncOp.setSpecAttr(sync.resolved);
    else
      cast<LinearLayerOpInterface>(sync.op).setLayerSync(sync.resolved);
  }
}
