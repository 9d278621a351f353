//===- CollectiveRules.cpp - Reverse-mode rules of collectives ------------===//
//
// The collectives of a partitioned program (lamina-partition's `shard` ops,
// and the bwd_post syncs it keeps for backward generation) transposed as
// the spec's §3 table says: the collective each gradient needs is the one
// layout::syncBackward gives for the sync the collective implements
// (recorded on it as `lamina.from_sync`); a collective without that record
// takes the table's default (tensor_parallel_output_grad = true).
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "lamina/Lamina/Analysis/Collectives.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

/// `collective` of `dy` giving `type` on the grid and axes of the forward
/// collective `op`; `dy` itself for the identity.
template <typename Op>
Value buildBackwardCollective(OpBuilder &b, Op op, std::optional<layout::Collective> collective,
                Value dy, Type type) {
  if (!collective)
    return dy;
  return layout::buildCollective(
      b, op.getLoc(), *collective, dy, type, op.getGridAttr(),
      DenseI16ArrayAttr::get(op.getContext(), op.getGridAxes()));
}

/// The backward collective of `op`: the recorded sync's, else `fallback`.
std::optional<layout::Collective>
backwardOf(Operation *op, std::optional<layout::Collective> fallback) {
  if (auto sync = op->getAttrOfType<SyncAttr>(LaminaDialect::kFromSyncAttrName))
    return layout::syncBackward(sync);
  return fallback;
}

/// The spec's table for a collective that records no sync: a forward
/// all_reduce of partial sums → the identity, all_gather(a) →
/// reduce_scatter(a), reduce_scatter(a) and a split (scatter(a)) →
/// all_gather(a).
std::optional<layout::Collective> defaultBackward(shard::AllReduceOp) {
  return std::nullopt;
}
std::optional<layout::Collective> defaultBackward(shard::AllGatherOp op) {
  return layout::Collective{CollectiveKind::reduce_scatter,
                            op.getGatherAxis().getSExtValue()};
}
std::optional<layout::Collective> defaultBackward(shard::ReduceScatterOp op) {
  return layout::Collective{CollectiveKind::all_gather,
                            op.getScatterAxis().getSExtValue()};
}
std::optional<layout::Collective> defaultBackward(shard::AllSliceOp op) {
  return layout::Collective{CollectiveKind::all_gather,
                            op.getSliceAxis().getSExtValue()};
}

/// dx = the backward collective of `Op` applied to dy, shaped like the
/// forward's input.
template <typename Op>
struct CollectiveRule : Rule<CollectiveRule<Op>, Op> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto collective = cast<Op>(op);
    dxs[0] = buildBackwardCollective(b, collective,
                       backwardOf(op, defaultBackward(collective)), dys[0],
                       collective.getInput().getType());
    return success();
  }
};
} // namespace

Value autodiff::buildSyncBackward(OpBuilder &b, Location loc, SyncAttr sync,
                                  Value dy, Type type) {
  std::optional<layout::Collective> collective = layout::syncBackward(sync);
  return collective ? layout::buildCollective(b, loc, *collective, dy, type)
                    : dy;
}

void autodiff::registerCollectiveRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<CollectiveRule<shard::AllReduceOp>>(
        *context);
    shard::AllGatherOp::attachInterface<CollectiveRule<shard::AllGatherOp>>(
        *context);
    shard::ReduceScatterOp::attachInterface<
        CollectiveRule<shard::ReduceScatterOp>>(*context);
    shard::AllSliceOp::attachInterface<CollectiveRule<shard::AllSliceOp>>(
        *context);
  });
}
