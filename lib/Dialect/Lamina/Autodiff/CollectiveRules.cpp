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

#include "lamina/Lamina/Analysis/LayoutRules.h"
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

/// Where a collective runs: the grid and its axes.
struct GridPlace {
  FlatSymbolRefAttr grid;
  DenseI16ArrayAttr axes;
};

/// `collective` of `dy` on `place`, giving a value of type `type`; null for
/// the identity.
Value buildCollective(OpBuilder &b, Location loc, GridPlace place,
                      std::optional<layout::Collective> collective, Value dy,
                      Type type) {
  if (!collective)
    return dy;
  auto sum = shard::ReductionKindAttr::get(b.getContext(),
                                           shard::ReductionKind::Sum);
  auto axis = [&] { return b.getIndexAttr(*collective->axis); };
  switch (collective->kind) {
  case CollectiveKind::all_reduce:
    return shard::AllReduceOp::create(b, loc, type, place.grid, place.axes,
                                      dy, sum);
  case CollectiveKind::all_gather:
    return shard::AllGatherOp::create(b, loc, type, place.grid, place.axes,
                                      dy, axis());
  case CollectiveKind::reduce_scatter:
    return shard::ReduceScatterOp::create(b, loc, type, place.grid,
                                          place.axes, dy, sum, axis());
  case CollectiveKind::scatter:
    return shard::AllSliceOp::create(b, loc, type, place.grid, place.axes, dy,
                                     axis());
  }
  llvm_unreachable("unknown collective");
}

/// The backward collective of `op`: the recorded sync's, else `fallback`.
std::optional<layout::Collective>
backwardOf(Operation *op, std::optional<layout::Collective> fallback) {
  if (auto sync = op->getAttrOfType<SyncAttr>(LaminaDialect::kFromSyncAttrName))
    return layout::syncBackward(sync);
  return fallback;
}

template <typename Op>
GridPlace placeOf(Op op) {
  return {op.getGridAttr(),
          DenseI16ArrayAttr::get(op.getContext(), op.getGridAxes())};
}

int64_t axisOf(const APInt &axis) { return axis.getSExtValue(); }

/// Forward all_reduce of partial sums → the identity.
struct AllReduceRule : Rule<AllReduceRule, shard::AllReduceOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto reduce = cast<shard::AllReduceOp>(op);
    dxs[0] = buildCollective(b, op->getLoc(), placeOf(reduce),
                             backwardOf(op, std::nullopt), dys[0],
                             reduce.getInput().getType());
    return success();
  }
};

/// all_gather(a) → reduce_scatter(a), or a split under
/// tensor_parallel_output_grad = false.
struct AllGatherRule : Rule<AllGatherRule, shard::AllGatherOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto gather = cast<shard::AllGatherOp>(op);
    layout::Collective fallback{CollectiveKind::reduce_scatter,
                                axisOf(gather.getGatherAxis())};
    dxs[0] = buildCollective(b, op->getLoc(), placeOf(gather),
                             backwardOf(op, fallback), dys[0],
                             gather.getInput().getType());
    return success();
  }
};

/// reduce_scatter(a) → all_gather(a).
struct ReduceScatterRule : Rule<ReduceScatterRule, shard::ReduceScatterOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto scatter = cast<shard::ReduceScatterOp>(op);
    layout::Collective fallback{CollectiveKind::all_gather,
                                axisOf(scatter.getScatterAxis())};
    dxs[0] = buildCollective(b, op->getLoc(), placeOf(scatter),
                             backwardOf(op, fallback), dys[0],
                             scatter.getInput().getType());
    return success();
  }
};

/// A split of a replicated value (scatter(a)) → all_gather(a).
struct AllSliceRule : Rule<AllSliceRule, shard::AllSliceOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto slice = cast<shard::AllSliceOp>(op);
    layout::Collective fallback{CollectiveKind::all_gather,
                                axisOf(slice.getSliceAxis())};
    dxs[0] = buildCollective(b, op->getLoc(), placeOf(slice),
                             backwardOf(op, fallback), dys[0],
                             slice.getInput().getType());
    return success();
  }
};
} // namespace

Value autodiff::buildSyncBackward(OpBuilder &b, Location loc, SyncAttr sync,
                                  Value dy, Type type) {
  GridPlace place{FlatSymbolRefAttr::get(b.getContext(),
                                         LaminaDialect::kGridName),
                  b.getDenseI16ArrayAttr({0})};
  return buildCollective(b, loc, place, layout::syncBackward(sync), dy, type);
}

void autodiff::registerCollectiveRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<AllReduceRule>(*context);
    shard::AllGatherOp::attachInterface<AllGatherRule>(*context);
    shard::ReduceScatterOp::attachInterface<ReduceScatterRule>(*context);
    shard::AllSliceOp::attachInterface<AllSliceRule>(*context);
  });
}
