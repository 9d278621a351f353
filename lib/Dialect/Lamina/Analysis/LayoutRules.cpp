//===- LayoutRules.cpp - How ops map R / S(axis) / P layouts --------------===//

#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

LayoutAttr layout::replicated(MLIRContext *context) {
  return LayoutAttr::get(context, LayoutKind::replicated, std::nullopt);
}
LayoutAttr layout::partial(MLIRContext *context) {
  return LayoutAttr::get(context, LayoutKind::partial, std::nullopt);
}
LayoutAttr layout::sharded(MLIRContext *context, int64_t axis,
                           int64_t groups) {
  return LayoutAttr::get(context, LayoutKind::sharded, axis, groups);
}
bool layout::isReplicated(LayoutAttr l) {
  return l.getKind() == LayoutKind::replicated;
}
bool layout::isPartial(LayoutAttr l) {
  return l.getKind() == LayoutKind::partial;
}
bool layout::isSharded(LayoutAttr l) {
  return l && l.getKind() == LayoutKind::sharded;
}
bool layout::isShardedOn(LayoutAttr l, int64_t axis) {
  return l.getKind() == LayoutKind::sharded && l.getAxis() == axis;
}

/// Streams `parts` into one string (attributes print themselves).
template <typename... Parts>
static std::string text(const Parts &...parts) {
  std::string result;
  llvm::raw_string_ostream os(result);
  (os << ... << parts);
  return result;
}

/// How diagnostics name the value a layer or piece acts on.
static std::string describe(StringRef path) {
  return path.empty() ? std::string("the value") : "layer '" + path.str() + "'";
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

LayoutAttr layout::matmulLayoutImpliedByWeight(LayoutAttr weight,
                                               int64_t rank) {
  if (!weight || isReplicated(weight))
    return {};
  if (isShardedOn(weight, 0))
    return sharded(weight.getContext(), rank - 1, weight.getGroups());
  if (isShardedOn(weight, 1))
    return partial(weight.getContext());
  return {};
}

LayoutOrError layout::matmulLayout(LayoutAttr x, LayoutAttr w, int64_t rank) {
  int64_t last = rank - 1;
  if (isReplicated(w)) {
    if (isShardedOn(x, last))
      return LayoutOrError::error(
          "contracts an input sharded on its last axis with a replicated "
          "weight; shard the weight on axis 1 (row parallel) or all_gather "
          "the input (fwd_pre)");
    return x; // R, S(batch) or P pass through a linear map
  }
  if (isShardedOn(w, 0)) {
    if (!isReplicated(x))
      return LayoutOrError::error(
          text("is column parallel (weight S(0)) and needs a replicated "
               "input, but its input has layout ",
               x));
    return matmulLayoutImpliedByWeight(w, rank);
  }
  if (isShardedOn(w, 1)) {
    // Contracting the sharded axis gives partial sums whatever its groups,
    // as long as both operands hold the same parts of it.
    if (!isShardedOn(x, last) || x.getGroups() != w.getGroups())
      return LayoutOrError::error(
          text("is row parallel (weight S(1)) and needs its input sharded on "
               "the last axis (a column-parallel layer before it, or a "
               "fwd_post scatter), but the input has layout ",
               x));
    return matmulLayoutImpliedByWeight(w, rank);
  }
  return LayoutOrError::error(text("has a weight with unsupported layout ", w));
}

Check layout::checkBias(LayoutAttr value, LayoutAttr bias, int64_t rank,
                        StringRef path) {
  if (isPartial(value))
    return "adds its bias to partial sums (layout P) of " + describe(path) +
           ": every rank would add it once more (Slapo's double-bias bug); "
           "add a fwd_post all_reduce sync between the matmul and the bias";
  bool featuresSharded = isShardedOn(value, rank - 1);
  if (featuresSharded &&
      (!isShardedOn(bias, 0) || bias.getGroups() != value.getGroups()))
    return text("produces output features sharded over ranks (column "
                "parallel), so its bias must be sharded on axis 0 too, but "
                "the bias has layout ",
                bias);
  if (!featuresSharded && !isReplicated(bias))
    return text("adds a bias with layout ", bias,
                " to whole output features; the bias must be replicated");
  return std::nullopt;
}

Check layout::checkNotPartial(LayoutAttr value, StringRef what,
                              StringRef path) {
  if (!isPartial(value))
    return std::nullopt;
  return what.str() + " partial sums (layout P) of " + describe(path) +
         "; add a fwd_post all_reduce (or reduce_scatter) sync before it";
}

bool layout::syncsActOn(StringRef axis) {
  return axis == LaminaDialect::kTensorAxisName;
}

Check layout::checkDropout(DropoutAttr dropout, LayoutAttr value,
                           StringRef axis) {
  if (dropout && dropout.getForkRng() && syncsActOn(axis) &&
      isReplicated(value))
    return std::string(
        "uses fork_rng on a replicated value: every rank would drop a "
        "different mask of the same value; fork_rng is for sharded values");
  return std::nullopt;
}

LayoutOrError layout::syncLayout(SyncAttr sync, LayoutAttr in,
                                StringRef path) {
  LayoutOrError result = syncForward(sync, in);
  if (!result.failed())
    return result;
  return LayoutOrError::error(text("sync ", sync, " on ", describe(path), " ",
                                   result.getReason(),
                                   ", but its input has layout ", in));
}

LayoutOrError layout::linearLayerLayout(const LinearLayerParts &parts,
                                        LayoutAttr input, LayoutAttr weight,
                                        LayoutAttr bias, StringRef axis) {
  StringRef path = parts.path ? parts.path.getValue() : StringRef();
  int64_t rank = cast<RankedTensorType>(parts.input.getType()).getRank();
  SyncAttr sync = syncsActOn(axis) ? parts.sync : SyncAttr();
  bool onInput = sync && sync.getMode() == SyncMode::fwd_pre;
  if (onInput) {
    LayoutOrError gathered = syncLayout(sync, input, path);
    if (gathered.failed())
      return gathered;
    input = gathered.get();
  }
  LayoutOrError result = matmulLayout(input, weight, rank);
  if (result.failed())
    return result;
  if (sync && !onInput &&
      (result = syncLayout(sync, result.get(), path)).failed())
    return result;
  LayoutAttr out = result.get();
  Check problem;
  if (parts.bias && (problem = checkBias(out, bias, rank, path)))
    return LayoutOrError::error(*problem);
  if (parts.activation &&
      (problem = checkNotPartial(out, "applies its activation to", path)))
    return LayoutOrError::error(*problem);
  if (parts.dropout &&
      ((problem = checkNotPartial(out, "applies dropout to", path)) ||
       (problem = checkDropout(parts.dropout, out, axis))))
    return LayoutOrError::error(*problem);
  return out;
}

LayoutAttr layout::knownLayerOutputLayout(const LinearLayerParts &parts,
                                          LayoutAttr weight, int64_t rank) {
  LayoutAttr out = matmulLayoutImpliedByWeight(weight, rank);
  SyncAttr sync = parts.sync;
  if (!sync || sync.getMode() != SyncMode::fwd_post)
    return out;
  // A replicated weight leaves the layout to the input; assume the one the
  // sync legally takes.
  if (!out)
    out = sync.getCollective() == CollectiveKind::reduce_scatter
              ? partial(sync.getContext())
              : replicated(sync.getContext());
  LayoutOrError synced = syncForward(sync, out);
  return synced.failed() ? LayoutAttr() : synced.get();
}

LayoutOrError layout::fusedQkvLayout(LayoutAttr x, LayoutAttr w, LayoutAttr b,
                                     int64_t headsAxis) {
  if (!isReplicated(x))
    return LayoutOrError::error(text("needs a replicated input, got ", x));
  if (isShardedOn(w, 0) && w.getGroups() == 1) {
    if (!isShardedOn(b, 0) || b.getGroups() != 1)
      return LayoutOrError::error(
          "has its weight sharded by heads (S(0)) but not its bias");
    return sharded(x.getContext(), headsAxis);
  }
  if (!isReplicated(w))
    return LayoutOrError::error(
        text("shards its weight by heads on axis 0 only, got ", w));
  return x;
}

LayoutOrError layout::layerNormLayout(LayoutAttr input, LayoutAttr weight,
                                      LayoutAttr bias, int64_t rank,
                                      StringRef path) {
  if (Check problem = checkNotPartial(input, "normalizes", path))
    return LayoutOrError::error(*problem);
  if (isShardedOn(input, rank - 1))
    return LayoutOrError::error(
        "normalizes over the sharded last axis; all_gather the value first");
  for (LayoutAttr parameter : {weight, bias})
    if (parameter && !isReplicated(parameter))
      return LayoutOrError::error(
          text("takes a weight or bias with layout ", parameter,
               "; LayerNorm parameters must be replicated"));
  return input;
}

LayoutOrError layout::softmaxLayout(LayoutAttr input, int64_t dim,
                                    StringRef path) {
  if (Check problem = checkNotPartial(input, "applies softmax to", path))
    return LayoutOrError::error(*problem);
  if (isShardedOn(input, dim))
    return LayoutOrError::error(
        text("normalizes along the sharded axis ", dim,
             "; all_gather the value first"));
  return input;
}

//===----------------------------------------------------------------------===//
// Sync points
//===----------------------------------------------------------------------===//

LayoutOrError layout::syncForward(SyncAttr sync, LayoutAttr in) {
  if (sync.getMode() == SyncMode::bwd_post)
    return in; // the identity in the forward pass
  MLIRContext *context = sync.getContext();
  std::optional<int64_t> axis = sync.getAxis();
  switch (sync.getCollective()) {
  case CollectiveKind::all_reduce:
    if (!isPartial(in))
      return LayoutOrError::error("needs partial sums (P)");
    return replicated(context);
  case CollectiveKind::reduce_scatter:
    if (!isPartial(in))
      return LayoutOrError::error("needs partial sums (P)");
    return sharded(context, *axis);
  case CollectiveKind::all_gather:
    if (!isShardedOn(in, *axis) || in.getGroups() != 1)
      return LayoutOrError::error(
          text("needs a value sharded on axis ", *axis));
    return replicated(context);
  case CollectiveKind::scatter:
    if (!isReplicated(in))
      return LayoutOrError::error("needs a replicated value (R)");
    return sharded(context, *axis);
  }
  llvm_unreachable("unknown collective");
}

std::optional<Collective> layout::syncBackward(SyncAttr sync) {
  std::optional<int64_t> axis = sync.getAxis();
  // The transpose of a gather: reduce the gradient's blocks, or only keep
  // this rank's block when the output gradient is already whole on every
  // rank (tensor_parallel_output_grad = false).
  auto gatherTranspose = [&]() -> Collective {
    if (!sync.getTensorParallelOutputGrad().value_or(true))
      return {CollectiveKind::scatter, axis};
    return {CollectiveKind::reduce_scatter, axis};
  };
  switch (sync.getMode()) {
  case SyncMode::bwd_post:
    return Collective{CollectiveKind::all_reduce, std::nullopt};
  case SyncMode::fwd_pre:
    return gatherTranspose();
  case SyncMode::fwd_post:
    switch (sync.getCollective()) {
    case CollectiveKind::all_reduce:
      return std::nullopt;
    case CollectiveKind::all_gather:
      return gatherTranspose();
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::scatter:
      return Collective{CollectiveKind::all_gather, axis};
    }
  }
  llvm_unreachable("unknown sync");
}

//===----------------------------------------------------------------------===//
// Shapes and everything else
//===----------------------------------------------------------------------===//

LayoutOrError
layout::collapseLayout(LayoutAttr in,
                       ArrayRef<ReassociationIndices> reassociation,
                       ArrayRef<int64_t> shape) {
  if (Check problem = checkNotPartial(in, "reshapes", ""))
    return LayoutOrError::error(*problem);
  if (in.getKind() != LayoutKind::sharded)
    return in;
  int64_t axis = *in.getAxis();
  for (auto [group, dims] : llvm::enumerate(reassociation)) {
    if (!llvm::is_contained(dims, axis))
      continue;
    int64_t groups = in.getGroups();
    for (int64_t dim : dims) {
      if (dim == axis)
        break;
      if (ShapedType::isDynamic(shape[dim]))
        return LayoutOrError::error(
            text("merges the sharded axis ", axis,
                 " with a dynamic outer dimension; all_gather the value "
                 "first"));
      groups *= shape[dim];
    }
    return sharded(in.getContext(), group, groups);
  }
  llvm_unreachable("a reassociation covers every dim");
}

LayoutOrError
layout::expandLayout(LayoutAttr in,
                     ArrayRef<ReassociationIndices> reassociation,
                     ArrayRef<int64_t> shape) {
  if (Check problem = checkNotPartial(in, "reshapes", ""))
    return LayoutOrError::error(*problem);
  if (in.getKind() != LayoutKind::sharded)
    return in;
  const ReassociationIndices &dims = reassociation[*in.getAxis()];
  int64_t prefix = 1;
  for (int64_t dim : dims) {
    // A unit dim cannot be sharded: the blocks lie in the next one.
    if (prefix == in.getGroups() && shape[dim] != 1)
      return sharded(in.getContext(), dim);
    if (ShapedType::isDynamic(shape[dim]) || prefix > in.getGroups())
      break;
    prefix *= shape[dim];
  }
  return LayoutOrError::error(
      text("splits the sharded axis ", *in.getAxis(), " (", in.getGroups(),
           " groups) into dims that do not keep its groups apart; "
           "all_gather the value first"));
}

LayoutOrError layout::sliceLayout(LayoutAttr in, ArrayRef<int64_t> offsets,
                                  ArrayRef<int64_t> sizes,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> shape) {
  if (Check problem = checkNotPartial(in, "slices", ""))
    return LayoutOrError::error(*problem);
  if (in.getKind() != LayoutKind::sharded)
    return in;
  int64_t axis = *in.getAxis();
  int64_t size = shape[axis];
  if (offsets[axis] == 0 && sizes[axis] == size && strides[axis] == 1)
    return in;
  int64_t groupSize = size / in.getGroups();
  if (in.getGroups() > 1 && sizes[axis] == groupSize &&
      offsets[axis] % groupSize == 0 && strides[axis] == 1)
    return sharded(in.getContext(), axis);
  return LayoutOrError::error(
      text("slices the sharded axis ", axis,
           in.getGroups() > 1 ? " other than by whole groups" : "",
           "; all_gather the value first"));
}

LayoutOrError layout::insertSliceLayout(LayoutAttr source, LayoutAttr dest,
                                        bool destIsFresh,
                                        ArrayRef<int64_t> offsets,
                                        ArrayRef<int64_t> sizes,
                                        ArrayRef<int64_t> strides,
                                        ArrayRef<int64_t> destShape) {
  if (isPartial(source) || isPartial(dest))
    return LayoutOrError::error("inserts partial sums (layout P); add a "
                                "fwd_post all_reduce sync before it");
  if (source == dest)
    return dest.getKind() == LayoutKind::sharded &&
                   sizes[*dest.getAxis()] != destShape[*dest.getAxis()]
               ? LayoutOrError::error(
                     text("inserts into the sharded axis ", *dest.getAxis(),
                          " of a value; all_gather the values first"))
               : LayoutOrError(dest);
  // A sharded slice into fresh zeros (the gradient of a slice): whole along
  // the axis, or one group of it.
  if (source.getKind() == LayoutKind::sharded && isReplicated(dest) &&
      destIsFresh) {
    int64_t axis = *source.getAxis();
    if (sizes[axis] == destShape[axis] && offsets[axis] == 0 &&
        strides[axis] == 1)
      return source;
    if (source.getGroups() == 1 && strides[axis] == 1 &&
        destShape[axis] % sizes[axis] == 0 && offsets[axis] % sizes[axis] == 0)
      return sharded(source.getContext(), axis,
                     destShape[axis] / sizes[axis]);
  }
  return LayoutOrError::error(
      text("inserts a value with layout ", source, " into one with layout ",
           dest, "; all_gather the values first"));
}

LayoutOrError layout::embeddingLayout(LayoutAttr indices, LayoutAttr weight,
                                      StringRef path) {
  if (!isReplicated(indices))
    return LayoutOrError::error(
        text("takes indices with layout ", indices,
             "; the indices must be replicated"));
  if (isReplicated(weight))
    return indices;
  if (isShardedOn(weight, 0) && weight.getGroups() == 1)
    return partial(weight.getContext()); // each rank its vocabulary's rows
  return LayoutOrError::error(
      text("shards its weight as ", weight,
           "; an embedding is vocabulary parallel (S(0)) or replicated"));
}

LayoutOrError layout::crossEntropyLayout(LayoutAttr logits, LayoutAttr targets,
                                         StringRef path) {
  MLIRContext *context = logits.getContext();
  if (!isReplicated(targets))
    return LayoutOrError::error(text("takes targets with layout ", targets,
                                     "; the targets must be replicated"));
  if (Check problem = checkNotPartial(logits, "takes the loss of", path))
    return LayoutOrError::error(*problem);
  if (isReplicated(logits))
    return logits;
  if (isShardedOn(logits, 1) && logits.getGroups() == 1)
    return replicated(context); // vocabulary parallel
  return LayoutOrError::error(
      text("takes logits with layout ", logits,
           "; a loss takes whole logits or logits sharded on the classes "
           "(S(1), vocabulary parallel): all_gather them first"));
}

LayoutOrError layout::transposeLayout(LayoutAttr in,
                                      ArrayRef<int64_t> permutation) {
  if (Check problem = checkNotPartial(in, "transposes", ""))
    return LayoutOrError::error(*problem);
  if (in.getKind() != LayoutKind::sharded)
    return in;
  auto moved = llvm::find(permutation, *in.getAxis());
  return sharded(in.getContext(), moved - permutation.begin(),
                 in.getGroups());
}

LayoutOrError layout::batchMatmulLayout(LayoutAttr lhs, LayoutAttr rhs) {
  if (isPartial(lhs) || isPartial(rhs))
    return LayoutOrError::error(
        "receives partial sums (layout P); add a fwd_post all_reduce sync "
        "before it");
  if (lhs == rhs && (isReplicated(lhs) || isShardedOn(lhs, 0)))
    return lhs;
  // One operand's batches sharded, the other's whole (keys and values
  // replicated under queries sharded by heads): each rank takes its
  // batches of the whole one.
  for (auto [sharded, whole] : {std::pair(lhs, rhs), std::pair(rhs, lhs)})
    if (isShardedOn(sharded, 0) && isReplicated(whole))
      return sharded;
  return LayoutOrError::error(
      text("multiplies batches with layouts ", lhs, " and ", rhs,
           "; both must be sharded alike on the batch dim (the heads), one "
           "of them replicated, or both replicated"));
}

LayoutOrError layout::maskedFillLayout(LayoutAttr input, LayoutAttr mask,
                                       ArrayRef<int64_t> maskShape) {
  if (Check problem = checkNotPartial(input, "fills", ""))
    return LayoutOrError::error(*problem);
  if (!isReplicated(mask))
    return LayoutOrError::error(
        text("takes a mask with layout ", mask, "; the mask must be "
                                                "replicated"));
  if (input.getKind() == LayoutKind::sharded &&
      maskShape[*input.getAxis()] != 1)
    return LayoutOrError::error(
        text("fills a value sharded on axis ", *input.getAxis(),
             " with a mask that is not broadcast along it"));
  return input;
}

LayoutOrError layout::ropeLayout(LayoutAttr input, LayoutAttr cos,
                                 LayoutAttr sin,
                                 ArrayRef<int64_t> tableShape) {
  if (Check problem = checkNotPartial(input, "rotates", ""))
    return LayoutOrError::error(*problem);
  if (!isReplicated(cos) || !isReplicated(sin))
    return LayoutOrError::error(
        text("takes tables with layouts ", cos, " and ", sin,
             "; the tables must be replicated"));
  if (!isSharded(input))
    return input;
  int64_t axis = *input.getAxis();
  if (axis + 1 == int64_t(tableShape.size()))
    return LayoutOrError::error(
        text("rotates pairs of a value sharded on its last axis ", axis,
             "; shard it on another axis (its heads)"));
  if (tableShape[axis] != 1)
    return LayoutOrError::error(
        text("rotates a value sharded on axis ", axis,
             " with tables that are not broadcast along it"));
  return input;
}

bool layout::isSplatConstant(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  return constant && isa<SplatElementsAttr>(constant.getValue());
}

LayoutOrError layout::otherOpLayout(Operation *op,
                                    ArrayRef<LayoutAttr> operands) {
  MLIRContext *context = op->getContext();
  LayoutAttr shardedLayout;
  for (auto [operand, layout] : llvm::zip_equal(op->getOperands(), operands)) {
    if (isPartial(layout))
      return LayoutOrError::error(
          "receives partial sums (layout P); only a sync or another linear "
          "layer's reduction may take them: add a fwd_post all_reduce "
          "before it");
    if (!isa<RankedTensorType>(operand.getType()) || isSplatConstant(operand))
      continue;
    if (isReplicated(layout))
      continue;
    if (shardedLayout && layout != shardedLayout)
      return LayoutOrError::error(
          text("mixes operands with layouts ", shardedLayout, " and ", layout,
               ": all_gather one of them first (a fwd_post all_gather sync "
               "on the layer computing it)"));
    shardedLayout = layout;
  }
  if (!shardedLayout)
    return replicated(context);
  // Sharded values pass only through element-wise ops: every tensor
  // operand and result of one shape, no regions.
  RankedTensorType type;
  for (Type operandType : op->getOperandTypes())
    if ((type = dyn_cast<RankedTensorType>(operandType)))
      break;
  auto sameShape = [&](Type other) {
    auto tensor = dyn_cast<RankedTensorType>(other);
    return !tensor || tensor.getShape() == type.getShape();
  };
  if (op->getNumRegions() != 0 ||
      !llvm::all_of(op->getOperandTypes(), sameShape) ||
      !llvm::all_of(op->getResultTypes(), sameShape) ||
      op->getNumResults() == 0)
    return LayoutOrError::error(
        text("takes sharded operands (", shardedLayout,
             "); layouts propagate only through element-wise ops: "
             "all_gather the value first"));
  // A replicated operand composed with sharded ones (a rotary table, an
  // additive mask): each rank takes its block of it, without communication.
  return shardedLayout;
}

LayoutOrError layout::otherOpLayout(Operation *op, LayoutState &state) {
  return otherOpLayout(op, llvm::map_to_vector(op->getOperands(),
                                               [&](Value operand) {
                                                 return state.getLayout(operand);
                                               }));
}

Check layout::checkResult(LayoutAttr value, unsigned index) {
  if (value.getKind() == LayoutKind::sharded && value.getGroups() != 1)
    return text("returns a value sharded in ", value.getGroups(),
                " groups as result ", index,
                "; slice the groups apart or all_gather it first");
  if (!isPartial(value))
    return std::nullopt;
  return text("returns partial sums (layout P) as result ", index,
              "; add a fwd_post all_reduce sync before returning");
}
