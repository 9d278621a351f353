//===- LinalgLayoutModels.cpp - Layout rules of linalg ops ----------------===//
//
// The linalg ops between layers: transposes move the sharded axis with its
// dim; batch matmuls keep a sharded batch (the heads); broadcasts and sums
// map it through the dims they keep (a sum over it leaves partial sums).
//
//===----------------------------------------------------------------------===//

#include "LayoutModels.h"

#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

using namespace mlir::lamina::detail;

namespace {
/// Results at the per-rank shapes of their layouts, inits rebuilt there.
LogicalResult partitionDestinationStyle(Operation *op, PartitionState &state) {
  if (failed(state.localizeInits(cast<DestinationStyleOpInterface>(op))))
    return failure();
  for (OpResult result : op->getResults())
    result.setType(
        state.getLocalType(result.getType(), state.getLayout(result)));
  return success();
}

struct TransposeRules : Rules<TransposeRules, linalg::TransposeOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    return transposeLayout(state.getLayout(transpose.getInput()),
                           transpose.getPermutation());
  }
  /// The inverse permutation; partial sums stay partial.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    GradientLayout dy = state.getGradient(op->getResult(0));
    ArrayRef<int64_t> permutation = transpose.getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, source] : llvm::enumerate(permutation))
      inverse[source] = i;
    LayoutOrError dx = transposeLayout(dy.layout, inverse);
    if (dx.failed())
      return isPartial(dy.layout)
                 ? state.addGradient(op, transpose.getInput(), dy)
                 : op->emitOpError(dx.getReason());
    return state.addGradient(op, transpose.getInput(), {dx.get(), dy.origin});
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    return partitionDestinationStyle(op, state);
  }
};

struct BatchMatmulRules : Rules<BatchMatmulRules, linalg::BatchMatmulOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto matmul = cast<linalg::BatchMatmulOp>(op);
    if (matmul.getNumDpsInputs() != 2 || matmul.hasUserDefinedMaps())
      return otherOpLayout(op, state);
    return batchMatmulLayout(state.getLayout(matmul.getDpsInputs()[0]),
                             state.getLayout(matmul.getDpsInputs()[1]));
  }
  /// dA = dC·Bᵀ and dB = Aᵀ·dC per batch: the batch's layout; a
  /// replicated operand's blocks are gathered back whole (the transpose of
  /// taking a block).
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto matmul = cast<linalg::BatchMatmulOp>(op);
    GradientLayout dy = state.getGradient(op->getResult(0));
    bool shardedResult = isSharded(state.getForwardLayout(op->getResult(0)));
    for (Value input : matmul.getDpsInputs()) {
      GradientLayout dx = dy;
      if (shardedResult && isReplicated(state.getForwardLayout(input)) &&
          isSharded(dy.layout))
        dx = {replicated(op->getContext()), dy.origin};
      if (failed(state.addGradient(op, input, dx)))
        return failure();
    }
    return success();
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    LayoutAttr layout = state.getLayout(op->getResult(0));
    if (isSharded(layout))
      state.takeLocalBlocks(op, layout);
    return partitionDestinationStyle(op, state);
  }
};

/// The result dims that hold the input's dims, in order: those a broadcast
/// does not add, or those a reduction keeps.
SmallVector<int64_t> keptDims(int64_t rank, ArrayRef<int64_t> others) {
  SmallVector<int64_t> kept;
  for (int64_t dim = 0; dim < rank; ++dim)
    if (!llvm::is_contained(others, dim))
      kept.push_back(dim);
  return kept;
}

/// A broadcast keeps the sharded axis, moved to its place among the result
/// dims; partial sums stay partial (broadcasting is linear).
struct BroadcastRules : Rules<BroadcastRules, linalg::BroadcastOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto broadcast = cast<linalg::BroadcastOp>(op);
    LayoutAttr in = state.getLayout(broadcast.getInput());
    if (!isSharded(in))
      return in;
    SmallVector<int64_t> kept = keptDims(broadcast.getInit().getType().getRank(),
                                         broadcast.getDimensions());
    return sharded(op->getContext(), kept[*in.getAxis()], in.getGroups());
  }
  /// The cotangent summed over the added dims: blocks of a kept dim stay
  /// blocks, blocks of an added dim become partial sums.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto broadcast = cast<linalg::BroadcastOp>(op);
    GradientLayout dy = state.getGradient(op->getResult(0));
    GradientLayout dx = dy;
    if (isSharded(dy.layout)) {
      SmallVector<int64_t> kept = keptDims(
          broadcast.getInit().getType().getRank(), broadcast.getDimensions());
      auto at = llvm::find(kept, *dy.layout.getAxis());
      dx.layout = at == kept.end()
                      ? partial(op->getContext())
                      : sharded(op->getContext(), at - kept.begin(),
                                dy.layout.getGroups());
    }
    return state.addGradient(op, broadcast.getInput(), dx);
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    return partitionDestinationStyle(op, state);
  }
};

/// Whether `reduce` adds (one input, one init, its body one arith.addf).
bool isSum(linalg::ReduceOp reduce) {
  Block &body = reduce.getCombiner().front();
  return reduce.getInputs().size() == 1 && body.getOperations().size() == 2 &&
         isa<arith::AddFOp>(body.front());
}

/// A sum over the sharded axis leaves partial sums; over other dims it
/// keeps the axis, moved among the kept dims.
struct ReduceRules : Rules<ReduceRules, linalg::ReduceOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto reduce = cast<linalg::ReduceOp>(op);
    if (reduce.getInputs().size() != 1)
      return otherOpLayout(op, state);
    LayoutAttr in = state.getLayout(reduce.getInputs()[0]);
    if (!isSharded(in)) {
      if (isPartial(in) && !isSum(reduce))
        return LayoutOrError::error(
            "reduces partial sums (layout P) other than by adding them; add "
            "a fwd_post all_reduce sync before it");
      return in;
    }
    ArrayRef<int64_t> dims = reduce.getDimensions();
    if (llvm::is_contained(dims, *in.getAxis())) {
      if (!isSum(reduce))
        return LayoutOrError::error(
            "reduces over the sharded axis " + std::to_string(*in.getAxis()) +
            " other than by adding; all_gather the value first");
      return partial(op->getContext());
    }
    SmallVector<int64_t> kept = keptDims(
        cast<RankedTensorType>(reduce.getInputs()[0].getType()).getRank(),
        dims);
    return sharded(op->getContext(), llvm::find(kept, *in.getAxis()) -
                                         kept.begin(),
                   in.getGroups());
  }
  /// The cotangent broadcast back: blocks of a kept dim stay blocks (at
  /// the input's dim); a whole cotangent of a sum over the sharded axis is
  /// what each rank's block needs.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto reduce = cast<linalg::ReduceOp>(op);
    if (reduce.getInputs().size() != 1)
      return state.addElementwiseGradients(op);
    Value input = reduce.getInputs()[0];
    GradientLayout dy = state.getGradient(op->getResult(0));
    GradientLayout dx = dy;
    if (isSharded(dy.layout)) {
      SmallVector<int64_t> kept = keptDims(
          cast<RankedTensorType>(input.getType()).getRank(),
          reduce.getDimensions());
      dx.layout = sharded(op->getContext(), kept[*dy.layout.getAxis()],
                          dy.layout.getGroups());
    } else if (isReplicated(dy.layout) &&
               isSharded(state.getForwardLayout(input))) {
      dx.layout = state.getForwardLayout(input);
    }
    return state.addGradient(op, input, dx);
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    return partitionDestinationStyle(op, state);
  }
};
} // namespace

void mlir::lamina::detail::registerLinalgLayoutModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::TransposeOp::attachInterface<TransposeRules>(*context);
    linalg::BatchMatmulOp::attachInterface<BatchMatmulRules>(*context);
    linalg::BroadcastOp::attachInterface<BroadcastRules>(*context);
    linalg::ReduceOp::attachInterface<ReduceRules>(*context);
  });
}
