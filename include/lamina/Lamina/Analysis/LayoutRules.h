//===- LayoutRules.h - How ops map R / S(axis) / P layouts ------*- C++ -*-===//
//
// The spec's layout rules (linear-and-schedule.md §2–3) in one place: what
// layout each op gives its result for the layouts of its operands, what a
// sync does in the forward pass and which collective it becomes in the
// backward pass. Layout checking, partitioning, the schedule primitives and
// backward generation all ask these functions; none restates a rule.
//
// A rule that rejects its operands returns the reason as a sentence
// fragment; callers attach it to the op (an op error, or a silenceable
// failure of a transform op).
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_ANALYSIS_LAYOUTRULES_H
#define LAMINA_LAMINA_ANALYSIS_LAYOUTRULES_H

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaLayoutInterface.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <string>

namespace mlir::lamina::layout {

/// Success, or why a rule rejects its operands.
using Check = std::optional<std::string>;

LayoutAttr replicated(MLIRContext *context);
LayoutAttr partial(MLIRContext *context);
LayoutAttr sharded(MLIRContext *context, int64_t axis, int64_t groups = 1);
bool isReplicated(LayoutAttr layout);
bool isPartial(LayoutAttr layout);
bool isShardedOn(LayoutAttr layout, int64_t axis);
/// Whether `layout` shards its value on some axis (null: replicated).
bool isSharded(LayoutAttr layout);
/// A splat constant, which every rank can build at any shape (so it takes
/// any layout).
bool isSplatConstant(Value value);

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

/// The layout of `x·Wᵀ` that a weight layout implies, given an input of the
/// matching layout: R → the input's, S(0) (column parallel) → S(last),
/// S(1) (row parallel) → P. Null for a replicated weight (the output then
/// follows the input).
LayoutAttr matmulLayoutImpliedByWeight(LayoutAttr weight, int64_t rank);

/// `x·Wᵀ` for an input of layout `input` and rank `rank`.
LayoutOrError matmulLayout(LayoutAttr input, LayoutAttr weight, int64_t rank);

/// Adding a bias of layout `bias` to a value of layout `value` and rank
/// `rank` (the output of layer `path`, or an unnamed value): features
/// sharded (column parallel) need a bias sharded on axis 0, whole features
/// a replicated one, partial sums none at all (the bias would be added once
/// per rank).
Check checkBias(LayoutAttr value, LayoutAttr bias, int64_t rank,
                StringRef path);

/// Element-wise steps that must not see partial sums (activation, dropout,
/// reshapes): `what` names the step ("applies dropout to"), `path` the layer
/// whose value it is (empty: unnamed).
Check checkNotPartial(LayoutAttr value, StringRef what, StringRef path);

/// A dropout on a value of layout `value` on grid axis `axis`: fork_rng
/// keys the stream by the rank on the tensor axis, which is only meaningful
/// for values sharded there.
Check checkDropout(DropoutAttr dropout, LayoutAttr value, StringRef axis);

/// Whether the collectives of schedules' syncs act on grid axis `axis` (the
/// tensor axis); on every other axis a sync is the identity.
bool syncsActOn(StringRef axis);

/// The layout a layer's output has on grid axis `axis`, given the layouts
/// of its input, weight and bias there: [fwd_pre sync] → matmul →
/// [fwd_post sync] → bias → activation → dropout, each step checked (the
/// sync on the tensor axis only).
LayoutOrError linearLayerLayout(const LinearLayerParts &parts,
                                LayoutAttr input, LayoutAttr weight,
                                LayoutAttr bias, StringRef axis);

/// The layout a layer's output would have whatever its input (a program
/// input's declared layout before a fwd_pre sync, otherwise what the weight
/// implies, through the fwd_post sync), or null where that depends on the
/// rest of the program. Schedule primitives judge syncs and fork_rng by it.
LayoutAttr knownLayerOutputLayout(const LinearLayerParts &parts,
                                  LayoutAttr weight, int64_t rank);

/// A fused QKV projection of input `input`, weight `weight`, bias `bias`;
/// the heads axis of q, k, v is `headsAxis`.
LayoutOrError fusedQkvLayout(LayoutAttr input, LayoutAttr weight,
                             LayoutAttr bias, int64_t headsAxis);

/// LayerNorm (layer `path`) over the last dim of a value of rank `rank`:
/// rows are
/// independent, so any axis but the last may stay sharded.
LayoutOrError layerNormLayout(LayoutAttr input, LayoutAttr weight,
                              LayoutAttr bias, int64_t rank, StringRef path);

/// Softmax along `dim` (of layer `path`, empty: unnamed): any other axis may
/// stay sharded.
LayoutOrError softmaxLayout(LayoutAttr input, int64_t dim, StringRef path);

//===----------------------------------------------------------------------===//
// Sync points
//===----------------------------------------------------------------------===//

/// What `sync` does forward to a value of layout `in` (all_reduce: P → R,
/// all_gather(a): S(a) → R, reduce_scatter(a): P → S(a), scatter(a):
/// R → S(a); bwd_post: the identity).
LayoutOrError syncForward(SyncAttr sync, LayoutAttr in);

/// A collective on the device grid's only axis.
struct Collective {
  CollectiveKind kind;
  std::optional<int64_t> axis;
};

/// syncForward, its rejection phrased with the sync and the value it acts on
/// (the output or input of layer `path`; empty: an unnamed value).
LayoutOrError syncLayout(SyncAttr sync, LayoutAttr in, StringRef path);

/// The collective the backward pass applies to the gradient of the value a
/// sync produced (the spec's §3 table): fwd_post all_reduce → none (the
/// identity), all_gather(a) → reduce_scatter(a) (a plain split, `scatter`,
/// under tensor_parallel_output_grad = false), reduce_scatter(a) and
/// scatter(a) → all_gather(a), fwd_pre all_gather(a) → reduce_scatter(a) /
/// split, bwd_post all_reduce → all_reduce.
std::optional<Collective> syncBackward(SyncAttr sync);

//===----------------------------------------------------------------------===//
// Shapes and everything else
//===----------------------------------------------------------------------===//

/// collapse_shape of a value of shape `shape`: the merged dim is sharded in
/// as many groups as the sharded axis had, times the sizes of the dims
/// merged before it (each rank's blocks of [B, heads] merged into B · heads
/// are B groups).
LayoutOrError collapseLayout(LayoutAttr source,
                             ArrayRef<ReassociationIndices> reassociation,
                             ArrayRef<int64_t> shape);

/// expand_shape into `shape`: the sharded axis, in g groups, splits into
/// dims whose leading ones number the g groups; the dim after them is
/// sharded (the first dim for g = 1).
LayoutOrError expandLayout(LayoutAttr source,
                           ArrayRef<ReassociationIndices> reassociation,
                           ArrayRef<int64_t> shape);

/// extract_slice of a value of shape `shape` (unit strides, no dims
/// dropped): a slice that keeps the sharded axis whole keeps its layout;
/// one that takes exactly one of its groups is sharded plainly (q, k, v of
/// a [Q; K; V] projection sharded by heads).
LayoutOrError sliceLayout(LayoutAttr source, ArrayRef<int64_t> offsets,
                          ArrayRef<int64_t> sizes, ArrayRef<int64_t> strides,
                          ArrayRef<int64_t> shape);

/// insert_slice of `source` into `dest` (of shape `destShape`, unit
/// strides): alike layouts away from a sharded axis; a sharded source into
/// fresh replicated zeros (the gradient of a slice), whole along the axis
/// or as one of its groups, gives the zeros the source's blocks.
LayoutOrError insertSliceLayout(LayoutAttr source, LayoutAttr dest,
                                bool destIsFresh, ArrayRef<int64_t> offsets,
                                ArrayRef<int64_t> sizes,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> destShape);

/// An embedding of replicated indices: a replicated weight gives a
/// replicated result; a weight sharded on its rows (vocabulary parallel)
/// gives partial sums, each rank's rows and zeros elsewhere.
LayoutOrError embeddingLayout(LayoutAttr indices, LayoutAttr weight,
                              StringRef path);

/// A cross-entropy loss of logits `[N, V]` and replicated targets: whole
/// logits give a whole loss; logits sharded on the classes (a head sharded
/// by vocabulary, not gathered) give it too, each rank computing the loss
/// from its block and all-reduced row statistics (vocabulary parallel).
LayoutOrError crossEntropyLayout(LayoutAttr logits, LayoutAttr targets,
                                 StringRef path);

/// linalg.transpose: the sharded axis moves with its dim.
LayoutOrError transposeLayout(LayoutAttr source,
                              ArrayRef<int64_t> permutation);

/// linalg.batch_matmul: both operands sharded alike on the batch dim (the
/// heads of attention), one of them sharded there and the other replicated
/// (each rank takes its batches of it), or both replicated.
LayoutOrError batchMatmulLayout(LayoutAttr lhs, LayoutAttr rhs);

/// masked_fill of a value of layout `input` with a mask of shape
/// `maskShape`: the mask is replicated and broadcast (size 1) along the
/// sharded axis.
LayoutOrError maskedFillLayout(LayoutAttr input, LayoutAttr mask,
                               ArrayRef<int64_t> maskShape);

/// rope of a value of layout `input` [..., D] with tables of layouts `cos`
/// and `sin` and shape `tableShape`: the input keeps its layout; it is not
/// sharded on D (pairs lie across it), and the tables are replicated and
/// broadcast (size 1) along the sharded axis, as heads are.
LayoutOrError ropeLayout(LayoutAttr input, LayoutAttr cos, LayoutAttr sin,
                         ArrayRef<int64_t> tableShape);

/// Any other op: no partial operand; sharded operands agree and pass only
/// through ops that keep shapes and have no regions (element-wise ops),
/// where replicated operands join them (each rank takes its block of
/// those). A splat constant operand takes any layout (each rank builds its
/// own).
LayoutOrError otherOpLayout(Operation *op, ArrayRef<LayoutAttr> operands);
/// otherOpLayout on the layouts `state` has found for `op`'s operands.
LayoutOrError otherOpLayout(Operation *op, LayoutState &state);

/// Result `index` of a function: partial sums must be reduced first.
Check checkResult(LayoutAttr value, unsigned index);

} // namespace mlir::lamina::layout

#endif // LAMINA_LAMINA_ANALYSIS_LAYOUTRULES_H
