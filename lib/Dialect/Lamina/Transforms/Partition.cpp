//===- Partition.cpp - One rank's part of a sharded program ---------------===//

#include "lamina/Lamina/Analysis/Collectives.h"
#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAPARTITION
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

static constexpr llvm::StringLiteral kGridName = LaminaDialect::kGridName;

namespace {
/// Rewrites one function into what one of `worldSize` ranks computes.
class FunctionPartitioner {
public:
  FunctionPartitioner(func::FuncOp function, int64_t worldSize,
                      DenseMap<Value, LayoutAttr> layouts,
                      bool keepBackwardSyncs)
      : function(function), worldSize(worldSize), layouts(std::move(layouts)),
        keepBackwardSyncs(keepBackwardSyncs), builder(function.getContext()) {}

  LogicalResult run();

private:
  LayoutAttr layoutOf(Value value) const { return layouts.lookup(value); }
  /// The per-rank type of a value of whole type `type` and layout `layout`.
  RankedTensorType localType(Type type, LayoutAttr layout) const;
  /// The process's index on the grid, created once at the function entry.
  Value rank();

  /// Replaces `op`'s only result by `value`, which takes over its layout.
  void replace(Operation *op, Value value);

  LogicalResult partitionSync(SyncOp sync);
  LogicalResult partitionDropout(DropoutOp dropout);
  LogicalResult partitionFusedQKV(FusedQKVOp qkv);
  LogicalResult partitionSlice(tensor::ExtractSliceOp slice);
  LogicalResult partitionInsert(tensor::InsertSliceOp insert);
  LogicalResult partitionOther(Operation *op);
  /// Where the group starting at `offset` of a grouped axis of `whole`
  /// elements starts in a rank's share: the same group index, in groups of
  /// the rank's block size.
  int64_t localGroupOffset(int64_t offset, int64_t whole,
                           LayoutAttr layout) const {
    int64_t groupSize = whole / layout.getGroups();
    return offset / groupSize * (groupSize / worldSize);
  }
  /// Gives the inits of a destination-style op with sharded results their
  /// per-rank shapes (a fresh tensor.empty, and its fill).
  LogicalResult localizeInits(DestinationStyleOpInterface op);
  /// A fresh tensor (tensor.empty, or its linalg.fill) like `value` at the
  /// per-rank type `local`, built at the builder's point; failure when
  /// `value` is not one.
  FailureOr<Value> rebuildFresh(Value value, RankedTensorType local);
  /// Rebuilds the splat constants `op` takes at the shape `type`.
  void localizeSplats(Operation *op, RankedTensorType type);

  func::FuncOp function;
  int64_t worldSize;
  DenseMap<Value, LayoutAttr> layouts;
  bool keepBackwardSyncs;
  OpBuilder builder;
  Value rankValue;
};
} // namespace

RankedTensorType FunctionPartitioner::localType(Type type,
                                                LayoutAttr layout) const {
  auto tensor = cast<RankedTensorType>(type);
  if (!layout || layout.getKind() != LayoutKind::sharded)
    return tensor;
  SmallVector<int64_t> shape(tensor.getShape());
  int64_t &size = shape[*layout.getAxis()];
  if (!ShapedType::isDynamic(size))
    size /= worldSize;
  return tensor.clone(shape);
}

Value FunctionPartitioner::rank() {
  if (rankValue)
    return rankValue;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&function.getBody().front());
  rankValue = shard::ProcessLinearIndexOp::create(
      builder, function.getLoc(), builder.getIndexType(), kGridName);
  return rankValue;
}

void FunctionPartitioner::replace(Operation *op, Value value) {
  Value old = op->getResult(0);
  // Erase the key first: a later op may reuse the erased result's storage.
  LayoutAttr layout = layouts.lookup(old);
  layouts.erase(old);
  if (layout && value.getDefiningOp() != nullptr && !layouts.count(value))
    layouts[value] = layout;
  old.replaceAllUsesWith(value);
  op->erase();
}

LogicalResult FunctionPartitioner::partitionSync(SyncOp sync) {
  Value input = sync.getInput();
  if (sync.getSpec().getMode() == SyncMode::bwd_post) {
    // The identity in the forward pass; backward generation transposes it.
    if (keepBackwardSyncs)
      sync.getResult().setType(cast<RankedTensorType>(input.getType()));
    else
      replace(sync, input);
    return success();
  }
  CollectiveKind collective = sync.getSpec().getCollective();
  bool reduces = collective == CollectiveKind::all_reduce ||
                 collective == CollectiveKind::reduce_scatter;
  if (reduces && !isa<FloatType>(sync.getType().getElementType()))
    return sync.emitOpError("reduces partial sums of ")
           << sync.getType().getElementType()
           << " across ranks, but MPI can only add floats: an LNS sum is an "
              "LNS addition. Shard LNS layers by columns (no partial sums) "
              "or keep them replicated";
  builder.setInsertionPoint(sync);
  Location loc = sync.getLoc();
  auto resultType = localType(sync.getType(), layoutOf(sync.getResult()));
  Value replacement = layout::buildCollective(
      builder, loc, {collective, sync.getSpec().getAxis()}, input, resultType);
  if (keepBackwardSyncs)
    replacement.getDefiningOp()->setAttr(LaminaDialect::kFromSyncAttrName,
                                         sync.getSpec());
  replace(sync, replacement);
  return success();
}

LogicalResult FunctionPartitioner::partitionDropout(DropoutOp dropout) {
  dropout.getResult().setType(dropout.getInput().getType());
  DropoutAttr config = dropout.getConfig();
  if (!config.isActive())
    return success();
  LayoutAttr layout = layoutOf(dropout.getInput());
  if (layout && layout.getKind() == LayoutKind::sharded &&
      layout.getGroups() != 1)
    return dropout.emitOpError("drops a value sharded in ")
           << layout.getGroups()
           << " groups, whose elements have no contiguous place per rank; "
              "slice the groups apart first";
  if (config.getForkRng()) {
    dropout.getRankMutable().assign(rank());
    return success();
  }
  if (!layout || layout.getKind() != LayoutKind::sharded)
    return success(); // replicated: the same mask on every rank
  dropout.setConfigAttr(DropoutAttr::get(
      dropout.getContext(), config.getP(), config.getTraining(),
      config.getOffset(), /*forkRng=*/false, *layout.getAxis(), worldSize));
  dropout.getRankMutable().assign(rank());
  return success();
}

LogicalResult FunctionPartitioner::partitionFusedQKV(FusedQKVOp qkv) {
  LayoutAttr layout = layoutOf(qkv.getQ());
  if (!layout || layout.getKind() != LayoutKind::sharded)
    return success();
  if (qkv.getNumHeads() % worldSize != 0)
    return qkv.emitOpError("has ")
           << qkv.getNumHeads() << " heads, which " << worldSize
           << " ranks cannot share evenly";
  qkv.setWorldSize(worldSize);
  for (Value result : qkv->getResults())
    result.setType(localType(result.getType(), layout));
  return success();
}

LogicalResult FunctionPartitioner::partitionSlice(tensor::ExtractSliceOp slice) {
  LayoutAttr layout = layoutOf(slice.getSource());
  if (!layout || layout.getKind() != LayoutKind::sharded)
    return success();
  int64_t axis = *layout.getAxis();
  SmallVector<int64_t> offsets(slice.getStaticOffsets());
  SmallVector<int64_t> sizes(slice.getStaticSizes());
  // The source already has its per-rank shape; the slice's bounds are
  // still the whole tensor's.
  int64_t whole = slice.getSourceType().getDimSize(axis) * worldSize;
  if (sizes[axis] == whole) {
    sizes[axis] = whole / worldSize;
  } else {
    // One group of a grouped axis: its rank block sits at the same group
    // index in the rank's share.
    offsets[axis] = localGroupOffset(offsets[axis], whole, layout);
    sizes[axis] = whole / layout.getGroups() / worldSize;
  }
  builder.setInsertionPoint(slice);
  auto local = RankedTensorType::get(sizes, slice.getType().getElementType());
  auto replacement = tensor::ExtractSliceOp::create(
      builder, slice.getLoc(), local, slice.getSource(),
      ValueRange{}, ValueRange{}, ValueRange{},
      builder.getDenseI64ArrayAttr(offsets), builder.getDenseI64ArrayAttr(sizes),
      slice.getStaticStridesAttr());
  replace(slice, replacement.getResult());
  return success();
}

FailureOr<Value> FunctionPartitioner::rebuildFresh(Value value,
                                                   RankedTensorType local) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  Value empty = fill ? fill.getDpsInits()[0] : value;
  if (!empty.getDefiningOp<tensor::EmptyOp>())
    return failure();
  Value fresh = tensor::EmptyOp::create(builder, value.getLoc(),
                                        local.getShape(),
                                        local.getElementType());
  if (fill)
    fresh = linalg::FillOp::create(builder, value.getLoc(), fill.getInputs(),
                                   fresh)
                .getResult(0);
  return fresh;
}

LogicalResult
FunctionPartitioner::partitionInsert(tensor::InsertSliceOp insert) {
  LayoutAttr layout = layoutOf(insert.getResult());
  if (!layout || layout.getKind() != LayoutKind::sharded)
    return success();
  int64_t axis = *layout.getAxis();
  auto local = localType(insert.getType(), layout);
  SmallVector<int64_t> offsets(insert.getStaticOffsets());
  SmallVector<int64_t> sizes(insert.getStaticSizes());
  // The slice's bounds are still the whole tensor's; the source already
  // has its per-rank shape.
  int64_t whole = insert.getType().getDimSize(axis);
  if (sizes[axis] != whole)
    offsets[axis] = localGroupOffset(offsets[axis], whole, layout);
  sizes[axis] = insert.getSourceType().getDimSize(axis);
  builder.setInsertionPoint(insert);
  Value dest = insert.getDest();
  if (dest.getType() != local) {
    // Fresh zeros: the layout rule admits no other dest here.
    FailureOr<Value> fresh = rebuildFresh(dest, local);
    if (failed(fresh))
      return insert.emitOpError("inserts into a sharded value that is not a "
                                "fresh tensor");
    dest = *fresh;
  }
  auto replacement = tensor::InsertSliceOp::create(
      builder, insert.getLoc(), insert.getSource(), dest, ValueRange{},
      ValueRange{}, ValueRange{}, builder.getDenseI64ArrayAttr(offsets),
      builder.getDenseI64ArrayAttr(sizes), insert.getStaticStridesAttr());
  replace(insert, replacement.getResult());
  return success();
}

LogicalResult
FunctionPartitioner::localizeInits(DestinationStyleOpInterface op) {
  for (OpOperand &init : op.getDpsInitsMutable()) {
    OpResult result = op.getTiedOpResult(&init);
    auto local = localType(result.getType(), layoutOf(result));
    if (init.get().getType() == local)
      continue;
    builder.setInsertionPoint(op);
    FailureOr<Value> fresh = rebuildFresh(init.get(), local);
    if (failed(fresh))
      return op->emitOpError("has a sharded result whose init is not a "
                             "fresh tensor; the partitioner cannot give it "
                             "a per-rank shape");
    init.set(*fresh);
  }
  return success();
}

void FunctionPartitioner::localizeSplats(Operation *op,
                                         RankedTensorType type) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto constant = operand.get().getDefiningOp<arith::ConstantOp>();
    auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue())
                          : SplatElementsAttr();
    if (!splat || splat.getType() == type ||
        splat.getType().getElementType() != type.getElementType())
      continue;
    builder.setInsertionPoint(op);
    operand.set(arith::ConstantOp::create(
        builder, constant.getLoc(),
        SplatElementsAttr::get(type, splat.getSplatValue<Attribute>())));
  }
}

/// Any other op: its results take the per-rank shapes of their layouts (the
/// layout rules only let sharded values through ops whose result shapes
/// follow their operands': matmuls, bias adds, element-wise ops); reshapes
/// that move the sharded axis are rebuilt.
LogicalResult FunctionPartitioner::partitionOther(Operation *op) {
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    collapse.getResult().setType(tensor::CollapseShapeOp::inferCollapsedType(
        collapse.getSrcType(), collapse.getReassociationIndices()));
    return success();
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    LayoutAttr layout = layoutOf(expand.getResult());
    auto local = localType(expand.getType(), layout);
    if (local != expand.getType()) {
      builder.setInsertionPoint(expand);
      auto replacement = tensor::ExpandShapeOp::create(
          builder, expand.getLoc(), local, expand.getSrc(),
          expand.getReassociationIndices());
      replace(expand, replacement.getResult());
    }
    return success();
  }
  if (auto destination = dyn_cast<DestinationStyleOpInterface>(op);
      destination && isa<linalg::TransposeOp, linalg::BatchMatmulOp>(op)) {
    if (failed(localizeInits(destination)))
      return failure();
    for (OpResult result : op->getResults())
      result.setType(localType(result.getType(), layoutOf(result)));
    return success();
  }
  for (OpResult result : op->getResults()) {
    auto tensor = dyn_cast<RankedTensorType>(result.getType());
    LayoutAttr layout = layoutOf(result);
    if (!tensor || !layout || layout.getKind() != LayoutKind::sharded)
      continue;
    if (op->getNumRegions() != 0 || op->getNumOperands() == 0)
      return op->emitOpError("has a sharded result the partitioner cannot "
                             "give a per-rank shape");
    RankedTensorType local = localType(tensor, layout);
    localizeSplats(op, local);
    result.setType(local);
  }
  return success();
}

LogicalResult FunctionPartitioner::run() {
  Block &entry = function.getBody().front();
  for (BlockArgument argument : entry.getArguments())
    if (isa<RankedTensorType>(argument.getType()))
      argument.setType(localType(argument.getType(), layoutOf(argument)));

  for (Operation &op : llvm::make_early_inc_range(entry)) {
    if (isa<LinearLayerOpInterface>(&op))
      return op.emitOpError("is a layer; partitioning needs decomposed "
                            "layers (run lamina-decompose first)");
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](SyncOp sync) { return partitionSync(sync); })
            .Case([&](DropoutOp dropout) { return partitionDropout(dropout); })
            .Case([&](FusedQKVOp qkv) { return partitionFusedQKV(qkv); })
            .Case([&](tensor::ExtractSliceOp slice) {
              return partitionSlice(slice);
            })
            .Case([&](tensor::InsertSliceOp insert) {
              return partitionInsert(insert);
            })
            .Case([&](EmbeddingGradOp grad) {
              LayoutAttr layout = layoutOf(grad.getResult());
              if (layout && layout.getKind() == LayoutKind::sharded) {
                grad.setShardsAttr(builder.getI64IntegerAttr(worldSize));
                grad.getRankMutable().assign(rank());
                grad.getResult().setType(
                    localType(grad.getType(), layout));
              }
              grad->removeAttr(LaminaDialect::kLayoutAttrName);
              return success();
            })
            .Case([&](CrossEntropyOp loss) {
              LayoutAttr logits = layoutOf(loss.getLogits());
              if (logits && logits.getKind() == LayoutKind::sharded) {
                loss.setShardsAttr(builder.getI64IntegerAttr(worldSize));
                loss.getRankMutable().assign(rank());
              }
              return success();
            })
            .Case([&](EmbeddingOp embedding) {
              LayoutAttr weight = layoutOf(embedding.getWeight());
              if (weight && weight.getKind() == LayoutKind::sharded) {
                embedding.setShardsAttr(
                    builder.getI64IntegerAttr(worldSize));
                embedding.getRankMutable().assign(rank());
              }
              return success();
            })
            .Case([&](func::ReturnOp ret) {
              for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
                LayoutAttr layout = layoutOf(value);
                if (layout && layout.getKind() == LayoutKind::sharded)
                  function.setResultAttr(index, LaminaDialect::kLayoutAttrName,
                                         layout);
              }
              return success();
            })
            .Default([&](Operation *other) { return partitionOther(other); });
    if (failed(result))
      return failure();
  }
  function.setType(FunctionType::get(
      function.getContext(), entry.getArgumentTypes(),
      entry.getTerminator()->getOperandTypes()));
  return success();
}

LogicalResult mlir::lamina::partitionModule(ModuleOp module,
                                            bool keepBackwardSyncs) {
  std::optional<int64_t> worldSize = getWorldSize(module);
  if (!worldSize || *worldSize == 1 || isPartitioned(module))
    return success();
  // Infer every function's layouts first: a rejected program is left as it
  // was.
  FailureOr<FunctionLayouts> plans = inferLayouts(module);
  if (failed(plans))
    return failure();
  for (auto &[function, layouts] : *plans)
    if (failed(FunctionPartitioner(function, *worldSize, std::move(layouts),
                                   keepBackwardSyncs)
                   .run()))
      return failure();

  OpBuilder builder(module.getBodyRegion());
  if (!SymbolTable::lookupSymbolIn(module, kGridName)) {
    auto grid = shard::GridOp::create(builder, module.getLoc(), kGridName,
                                      ArrayRef<int64_t>{*worldSize});
    grid.setPrivate();
  }
  module->setAttr(LaminaDialect::kPartitionedAttrName, builder.getUnitAttr());
  return success();
}

namespace {
struct LaminaPartitionPass
    : mlir::lamina::impl::LaminaPartitionBase<LaminaPartitionPass> {
  void runOnOperation() override {
    if (failed(partitionModule(getOperation())))
      signalPassFailure();
  }
};
} // namespace
