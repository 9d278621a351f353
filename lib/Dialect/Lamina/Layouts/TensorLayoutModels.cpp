//===- TensorLayoutModels.cpp - Layout rules of tensor reshapes, slices ---===//
//
// The tensor ops the importer writes between layers: reshapes move the
// sharded axis (and its groups) with the dims it merges into or splits
// from; slices keep a sharded axis whole or take one of its groups;
// concatenations along another axis keep it.
//
//===----------------------------------------------------------------------===//

#include "LayoutModels.h"

#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

using namespace mlir::lamina::detail;

namespace {
/// A gradient through a reshape: partial sums stay partial, anything else
/// takes the layout of the inverse reshape, `inverse(dy)`, or the op
/// reports why there is none.
LogicalResult
addReshapedGradient(Operation *op, Value source, GradientLayoutState &state,
                    function_ref<LayoutOrError(LayoutAttr)> inverse) {
  GradientLayout dy = state.getGradient(op->getResult(0));
  if (isPartial(dy.layout))
    return state.addGradient(op, source, dy);
  LayoutOrError dx = inverse(dy.layout);
  return dx.failed() ? op->emitOpError(dx.getReason())
                     : state.addGradient(op, source, {dx.get(), ""});
}

struct CollapseShapeRules : Rules<CollapseShapeRules, tensor::CollapseShapeOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    return collapseLayout(state.getLayout(collapse.getSrc()),
                          collapse.getReassociationIndices(),
                          collapse.getSrcType().getShape());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    return addReshapedGradient(op, collapse.getSrc(), state, [&](LayoutAttr dy) {
      return expandLayout(dy, collapse.getReassociationIndices(),
                          collapse.getSrcType().getShape());
    });
  }
  LogicalResult partition(Operation *op, PartitionState &) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    collapse.getResult().setType(tensor::CollapseShapeOp::inferCollapsedType(
        collapse.getSrcType(), collapse.getReassociationIndices()));
    return success();
  }
};

struct ExpandShapeRules : Rules<ExpandShapeRules, tensor::ExpandShapeOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    return expandLayout(state.getLayout(expand.getSrc()),
                        expand.getReassociationIndices(),
                        expand.getResultType().getShape());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    return addReshapedGradient(op, expand.getSrc(), state, [&](LayoutAttr dy) {
      return collapseLayout(dy, expand.getReassociationIndices(),
                            expand.getResultType().getShape());
    });
  }
  /// The result's shape is stated, not inferred: rebuilt at the rank's.
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    auto local = state.getLocalType(expand.getType(),
                                    state.getLayout(expand.getResult()));
    if (local == expand.getType())
      return success();
    OpBuilder &builder = state.getBuilder();
    builder.setInsertionPoint(expand);
    auto replacement =
        tensor::ExpandShapeOp::create(builder, expand.getLoc(), local,
                                      expand.getSrc(),
                                      expand.getReassociationIndices());
    state.replace(expand, replacement.getResult());
    return success();
  }
};

struct ExtractSliceRules : Rules<ExtractSliceRules, tensor::ExtractSliceOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    LayoutAttr in = state.getLayout(slice.getSource());
    if (in.getKind() == LayoutKind::sharded &&
        (slice.getSourceType().getRank() != slice.getType().getRank() ||
         ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
         ShapedType::isDynamicShape(slice.getStaticSizes()) ||
         ShapedType::isDynamicShape(slice.getStaticStrides())))
      return LayoutOrError::error("slices a sharded value with dynamic or "
                                  "rank-reducing bounds; all_gather it first");
    return sliceLayout(in, slice.getStaticOffsets(), slice.getStaticSizes(),
                       slice.getStaticStrides(),
                       slice.getSourceType().getShape());
  }
  /// The cotangent placed in zeros: blocked like the forward source when
  /// blocked like the forward slice.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    GradientLayout dy = state.getGradient(slice.getResult());
    LayoutAttr forward = state.getForwardLayout(slice.getResult());
    if (dy.layout == forward)
      return state.addGradient(
          op, slice.getSource(),
          {state.getForwardLayout(slice.getSource()), ""});
    return op->emitOpError("has no backward layout rule for its gradient ")
           << dy.layout << " (the forward slice has layout " << forward
           << ")";
  }
  /// The bounds become the rank's: the whole sharded axis, or the rank's
  /// block of the one group taken.
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    LayoutAttr layout = state.getLayout(slice.getSource());
    if (!isSharded(layout))
      return success();
    int64_t axis = *layout.getAxis();
    int64_t worldSize = state.getWorldSize();
    SmallVector<int64_t> offsets(slice.getStaticOffsets());
    SmallVector<int64_t> sizes(slice.getStaticSizes());
    // The source already has its per-rank shape; the slice's bounds are
    // still the whole tensor's.
    int64_t whole = slice.getSourceType().getDimSize(axis) * worldSize;
    if (sizes[axis] == whole) {
      sizes[axis] = whole / worldSize;
    } else {
      offsets[axis] = state.getLocalGroupOffset(offsets[axis], whole, layout);
      sizes[axis] = whole / layout.getGroups() / worldSize;
    }
    OpBuilder &builder = state.getBuilder();
    builder.setInsertionPoint(slice);
    auto local =
        RankedTensorType::get(sizes, slice.getType().getElementType());
    auto replacement = tensor::ExtractSliceOp::create(
        builder, slice.getLoc(), local, slice.getSource(), ValueRange{},
        ValueRange{}, ValueRange{}, builder.getDenseI64ArrayAttr(offsets),
        builder.getDenseI64ArrayAttr(sizes), slice.getStaticStridesAttr());
    state.replace(slice, replacement.getResult());
    return success();
  }
};

/// A tensor.empty, or a linalg.fill of one: a value each rank can build at
/// its own shape.
bool isFreshTensor(Value value) {
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    value = fill.getDpsInits()[0];
  return value.getDefiningOp<tensor::EmptyOp>() != nullptr;
}

struct InsertSliceRules : Rules<InsertSliceRules, tensor::InsertSliceOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    if (ShapedType::isDynamicShape(insert.getStaticOffsets()) ||
        ShapedType::isDynamicShape(insert.getStaticSizes()) ||
        ShapedType::isDynamicShape(insert.getStaticStrides()) ||
        insert.getSourceType().getRank() != insert.getType().getRank())
      return otherOpLayout(op, state);
    Value dest = insert.getDest();
    return insertSliceLayout(
        state.getLayout(insert.getSource()), state.getLayout(dest),
        isFreshTensor(dest), insert.getStaticOffsets(),
        insert.getStaticSizes(), insert.getStaticStrides(),
        insert.getType().getShape());
  }
  /// The rank's block of the slice into the rank's block of fresh zeros.
  LogicalResult partition(Operation *op, PartitionState &state) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    LayoutAttr layout = state.getLayout(insert.getResult());
    if (!isSharded(layout))
      return success();
    int64_t axis = *layout.getAxis();
    auto local = state.getLocalType(insert.getType(), layout);
    SmallVector<int64_t> offsets(insert.getStaticOffsets());
    SmallVector<int64_t> sizes(insert.getStaticSizes());
    // The slice's bounds are still the whole tensor's; the source already
    // has its per-rank shape.
    int64_t whole = insert.getType().getDimSize(axis);
    if (sizes[axis] != whole)
      offsets[axis] = state.getLocalGroupOffset(offsets[axis], whole, layout);
    sizes[axis] = insert.getSourceType().getDimSize(axis);
    OpBuilder &builder = state.getBuilder();
    builder.setInsertionPoint(insert);
    Value dest = insert.getDest();
    if (dest.getType() != local) {
      // Fresh zeros: the layout rule admits no other dest here.
      FailureOr<Value> fresh = state.rebuildFresh(dest, local);
      if (failed(fresh))
        return insert.emitOpError("inserts into a sharded value that is not "
                                  "a fresh tensor");
      dest = *fresh;
    }
    auto replacement = tensor::InsertSliceOp::create(
        builder, insert.getLoc(), insert.getSource(), dest, ValueRange{},
        ValueRange{}, ValueRange{}, builder.getDenseI64ArrayAttr(offsets),
        builder.getDenseI64ArrayAttr(sizes), insert.getStaticStridesAttr());
    state.replace(insert, replacement.getResult());
    return success();
  }
};
/// A concatenation along an axis other than the sharded one keeps it;
/// replicated parts join as their blocks (RoPE's `torch.stack` of rotated
/// halves, a table beside sharded heads).
struct ConcatRules : Rules<ConcatRules, tensor::ConcatOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto concat = cast<tensor::ConcatOp>(op);
    LayoutAttr result = replicated(op->getContext());
    for (Value input : concat.getInputs()) {
      LayoutAttr layout = state.getLayout(input);
      if (isPartial(layout))
        return LayoutOrError::error("concatenates partial sums (layout P); "
                                    "add a fwd_post all_reduce sync before "
                                    "it");
      if (isReplicated(layout))
        continue;
      if (isSharded(result) && layout != result)
        return LayoutOrError::error(
            "concatenates values sharded differently; all_gather them "
            "first");
      result = layout;
    }
    if (!isSharded(result))
      return result;
    if (*result.getAxis() == int64_t(concat.getDim()))
      return LayoutOrError::error(
          "concatenates along the sharded axis " +
          std::to_string(concat.getDim()) + "; all_gather the values first");
    return result;
  }
  /// Each part's slice of the cotangent, blocks gathered back whole for a
  /// replicated part.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto concat = cast<tensor::ConcatOp>(op);
    GradientLayout dy = state.getGradient(op->getResult(0));
    for (Value input : concat.getInputs()) {
      GradientLayout dx = dy;
      if (isSharded(dy.layout) && isReplicated(state.getForwardLayout(input)))
        dx.layout = replicated(op->getContext());
      if (failed(state.addGradient(op, input, dx)))
        return failure();
    }
    return success();
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    LayoutAttr layout = state.getLayout(op->getResult(0));
    if (!isSharded(layout))
      return success();
    state.takeLocalBlocks(op, layout);
    op->getResult(0).setType(
        state.getLocalType(op->getResult(0).getType(), layout));
    return success();
  }
};
} // namespace

void mlir::lamina::detail::registerTensorLayoutModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::CollapseShapeOp::attachInterface<CollapseShapeRules>(*context);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeRules>(*context);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceRules>(*context);
    tensor::InsertSliceOp::attachInterface<InsertSliceRules>(*context);
    tensor::ConcatOp::attachInterface<ConcatRules>(*context);
  });
}
