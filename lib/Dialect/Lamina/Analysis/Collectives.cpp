//===- Collectives.cpp - The shard op of a collective ---------------------===//

#include "lamina/Lamina/Analysis/Collectives.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace mlir::lamina;

int16_t layout::getTensorAxisIndex(Operation *scope) {
  for (auto [index, axis] : llvm::enumerate(getGridAxes(scope)))
    if (axis.name == LaminaDialect::kTensorAxisName)
      return static_cast<int16_t>(index);
  return 0;
}

/// The grid axes of a collective built at `b`'s insertion point: the
/// tensor axis of the module there.
static DenseI16ArrayAttr getTensorAxes(OpBuilder &b) {
  Block *block = b.getInsertionBlock();
  Operation *scope = block ? block->getParentOp() : nullptr;
  int16_t axis = scope ? layout::getTensorAxisIndex(scope) : 0;
  return b.getDenseI16ArrayAttr({axis});
}

Value layout::buildCollective(OpBuilder &b, Location loc, Collective collective,
                              Value input, Type resultType,
                              FlatSymbolRefAttr grid, DenseI16ArrayAttr axes) {
  MLIRContext *context = b.getContext();
  if (!grid)
    grid = FlatSymbolRefAttr::get(context, LaminaDialect::kGridName);
  if (!axes)
    axes = getTensorAxes(b);
  auto sum = shard::ReductionKindAttr::get(context, shard::ReductionKind::Sum);
  auto axis = [&] { return b.getIndexAttr(*collective.axis); };
  switch (collective.kind) {
  case CollectiveKind::all_reduce:
    return shard::AllReduceOp::create(b, loc, resultType, grid, axes, input,
                                      sum);
  case CollectiveKind::all_gather:
    return shard::AllGatherOp::create(b, loc, resultType, grid, axes, input,
                                      axis());
  case CollectiveKind::reduce_scatter:
    return shard::ReduceScatterOp::create(b, loc, resultType, grid, axes,
                                          input, sum, axis());
  case CollectiveKind::scatter:
    return shard::AllSliceOp::create(b, loc, resultType, grid, axes, input,
                                     axis());
  }
  llvm_unreachable("unknown collective");
}

Value layout::buildAllReduce(OpBuilder &b, Location loc, Value input,
                             shard::ReductionKind reduction) {
  MLIRContext *context = b.getContext();
  return shard::AllReduceOp::create(
      b, loc, input.getType(),
      FlatSymbolRefAttr::get(context, LaminaDialect::kGridName),
      getTensorAxes(b), input,
      shard::ReductionKindAttr::get(context, reduction));
}
