//===- Partition.cpp - One rank's part of a sharded program ---------------===//
//
// Rewrites each function of a sharded program into what one rank computes:
// every op by its LayoutOpInterface model (lib/Dialect/Lamina/Layouts),
// element-wise ops without one. A called function is partitioned once, for
// the layouts its calls pass.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/Collectives.h"
#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"
#include "lamina/Lamina/IR/LaminaLayoutInterface.h"
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

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAPARTITION
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;
using layout::isSharded;
using layout::isSplatConstant;

static constexpr llvm::StringLiteral kGridName = LaminaDialect::kGridName;

namespace {
/// Rewrites one function into what one of `worldSize` ranks computes, each
/// op by its LayoutOpInterface model (element-wise without one).
class FunctionPartitioner : public PartitionState {
public:
  FunctionPartitioner(func::FuncOp function, int64_t worldSize,
                      DenseMap<Value, LayoutAttr> layouts,
                      bool keepBackwardSyncs)
      : function(function), worldSize(worldSize), layouts(std::move(layouts)),
        keepBackwardSyncs(keepBackwardSyncs), builder(function.getContext()) {}

  LogicalResult run();

  LayoutAttr getLayout(Value value) override { return layouts.lookup(value); }
  RankedTensorType getLocalType(Type type, LayoutAttr layout) override;
  int64_t getWorldSize() override { return worldSize; }
  Value getRank() override;
  bool keepsBackwardSyncs() override { return keepBackwardSyncs; }
  OpBuilder &getBuilder() override { return builder; }
  void replace(Operation *op, Value value) override;
  FailureOr<Value> rebuildFresh(Value value, RankedTensorType local) override;
  LogicalResult localizeInits(DestinationStyleOpInterface op) override;
  LogicalResult partitionElementwise(Operation *op) override;
  void takeLocalBlocks(Operation *op, LayoutAttr layout) override;

private:
  /// This rank's block of the replicated `whole` under `layout`.
  Value takeBlock(Location loc, Value whole, LayoutAttr layout);
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

RankedTensorType FunctionPartitioner::getLocalType(Type type,
                                                   LayoutAttr layout) {
  auto tensor = cast<RankedTensorType>(type);
  if (!isSharded(layout))
    return tensor;
  SmallVector<int64_t> shape(tensor.getShape());
  int64_t &size = shape[*layout.getAxis()];
  if (!ShapedType::isDynamic(size))
    size /= worldSize;
  return tensor.clone(shape);
}

Value FunctionPartitioner::getRank() {
  if (rankValue)
    return rankValue;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&function.getBody().front());
  // On a grid of several axes, the rank along the tensor axis.
  if (getGridAxes(function).size() > 1)
    rankValue =
        shard::ProcessMultiIndexOp::create(
            builder, function.getLoc(), TypeRange{builder.getIndexType()},
            kGridName, {layout::getTensorAxisIndex(function)})
            .getResult()[0];
  else
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
FunctionPartitioner::localizeInits(DestinationStyleOpInterface op) {
  for (OpOperand &init : op.getDpsInitsMutable()) {
    OpResult result = op.getTiedOpResult(&init);
    auto local = getLocalType(result.getType(), getLayout(result));
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

/// Element-wise ops: their results take the per-rank shapes of their
/// layouts (the layout rules only let sharded values through ops whose
/// result shapes follow their operands': matmuls, bias adds, element-wise
/// ops).
LogicalResult FunctionPartitioner::partitionElementwise(Operation *op) {
  for (OpResult result : op->getResults()) {
    auto tensor = dyn_cast<RankedTensorType>(result.getType());
    LayoutAttr layout = getLayout(result);
    if (!tensor || !isSharded(layout))
      continue;
    if (op->getNumRegions() != 0 || op->getNumOperands() == 0)
      return op->emitOpError("has a sharded result the partitioner cannot "
                             "give a per-rank shape");
    RankedTensorType local = getLocalType(tensor, layout);
    localizeSplats(op, local);
    result.setType(local);
  }
  return success();
}

void FunctionPartitioner::takeLocalBlocks(Operation *op, LayoutAttr layout) {
  int64_t axis = *layout.getAxis();
  auto destinationStyle = dyn_cast<DestinationStyleOpInterface>(op);
  for (OpOperand &operand : op->getOpOperands()) {
    Value whole = operand.get();
    auto type = dyn_cast<RankedTensorType>(whole.getType());
    // Inits are rebuilt fresh (localizeInits), splats at the local shape
    // (localizeSplats).
    if (!type || isSharded(getLayout(whole)) || isSplatConstant(whole) ||
        (destinationStyle && destinationStyle.isDpsInit(&operand)))
      continue;
    RankedTensorType local = getLocalType(type, layout);
    if (local == type)
      continue;
    auto broadcast = whole.getDefiningOp<linalg::BroadcastOp>();
    if (broadcast && whole.hasOneUse() &&
        llvm::is_contained(broadcast.getDimensions(), axis)) {
      builder.setInsertionPoint(broadcast);
      FailureOr<Value> fresh = rebuildFresh(broadcast.getInit(), local);
      if (succeeded(fresh)) {
        broadcast.getInitMutable().assign(*fresh);
        broadcast->getResult(0).setType(local);
        continue;
      }
    }
    builder.setInsertionPoint(op);
    operand.set(takeBlock(op->getLoc(), whole, layout));
  }
}

Value FunctionPartitioner::takeBlock(Location loc, Value whole,
                                     LayoutAttr layout) {
  auto type = cast<RankedTensorType>(whole.getType());
  int64_t axis = *layout.getAxis(), groups = layout.getGroups();
  if (groups == 1)
    return layout::buildCollective(builder, loc,
                                   {CollectiveKind::scatter, axis}, whole,
                                   getLocalType(type, layout));
  // This rank's part of each group: the axis split into [groups, size],
  // the inner dim sliced, the two merged again.
  SmallVector<int64_t> split(type.getShape());
  split[axis] /= groups;
  split.insert(split.begin() + axis, groups);
  SmallVector<ReassociationIndices> merge;
  for (int64_t dim = 0, rank = type.getRank(); dim < rank; ++dim)
    merge.push_back(dim < axis    ? ReassociationIndices{dim}
                    : dim == axis ? ReassociationIndices{dim, dim + 1}
                                  : ReassociationIndices{dim + 1});
  Value grouped = tensor::ExpandShapeOp::create(builder, loc,
                                                type.clone(split), whole,
                                                merge);
  SmallVector<int64_t> part(split);
  part[axis + 1] /= worldSize;
  Value sliced = layout::buildCollective(builder, loc,
                                         {CollectiveKind::scatter, axis + 1},
                                         grouped, type.clone(part));
  return tensor::CollapseShapeOp::create(builder, loc, sliced, merge);
}

LogicalResult FunctionPartitioner::run() {
  Block &entry = function.getBody().front();
  for (BlockArgument argument : entry.getArguments())
    if (isa<RankedTensorType>(argument.getType()))
      argument.setType(getLocalType(argument.getType(), getLayout(argument)));

  for (Operation &op : llvm::make_early_inc_range(entry)) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        LayoutAttr layout = getLayout(value);
        if (isSharded(layout))
          function.setResultAttr(index, LaminaDialect::kLayoutAttrName,
                                 layout);
      }
      continue;
    }
    if (auto rules = dyn_cast<LayoutOpInterface>(op)) {
      if (failed(rules.partition(*this)))
        return failure();
      continue;
    }
    // A call of a function partitioned for its operands' layouts: its
    // results come back at their per-rank shapes.
    if (auto call = dyn_cast<func::CallOp>(op);
        call && getDefinedCallee(call)) {
      for (OpResult result : call->getResults())
        if (isa<RankedTensorType>(result.getType()))
          result.setType(getLocalType(result.getType(), getLayout(result)));
      continue;
    }
    // An element-wise op: replicated operands joining sharded ones take
    // their blocks.
    if (op.getNumResults() == 1 && isSharded(getLayout(op.getResult(0))))
      takeLocalBlocks(&op, getLayout(op.getResult(0)));
    if (failed(partitionElementwise(&op)))
      return failure();
  }
  function.setType(FunctionType::get(
      function.getContext(), entry.getArgumentTypes(),
      entry.getTerminator()->getOperandTypes()));
  return success();
}

/// Refuses arguments declared sharded over a grid axis other than the
/// tensor axis: the program is cut along `tp` alone, and on the other axes
/// it is each replica's (`dp`) or each stage's (`pp`) at its own shapes.
static LogicalResult checkOnlyTensorAxisShards(ModuleOp module) {
  SmallVector<GridAxis> axes = getGridAxes(module);
  WalkResult result = module.walk([&](func::FuncOp function) {
    for (unsigned index = 0; index < function.getNumArguments(); ++index) {
      Attribute declared =
          function.getArgAttr(index, LaminaDialect::kLayoutAttrName);
      for (const GridAxis &axis : axes) {
        if (axis.name == LaminaDialect::kTensorAxisName || axis.size == 1)
          continue;
        LayoutAttr layout = getLayoutOnAxis(declared, axis.name);
        if (!isSharded(layout))
          continue;
        function.emitOpError("argument ")
            << index << " is sharded over grid axis '"
            << axis.name.getValue() << "' (" << axis.size
            << " ranks), but lamina-partition cuts programs along grid axis '"
            << LaminaDialect::kTensorAxisName
            << "' alone: on the other axes a program is one replica's or "
               "one stage's, at its own shapes";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult mlir::lamina::partitionModule(ModuleOp module,
                                            bool keepBackwardSyncs) {
  // Each rank's part is cut along the tensor axis.
  std::optional<int64_t> tensorRanks =
      getGridAxisSize(module, LaminaDialect::kTensorAxisName);
  if (!tensorRanks || *tensorRanks == 1 || isPartitioned(module))
    return success();
  if (failed(checkOnlyTensorAxisShards(module)))
    return failure();
  // Infer every function's layouts first: a rejected program is left as it
  // was.
  FailureOr<FunctionLayouts> plans = inferLayouts(module);
  if (failed(plans))
    return failure();
  for (auto &[function, layouts] : *plans)
    if (failed(FunctionPartitioner(function, *tensorRanks, std::move(layouts),
                                   keepBackwardSyncs)
                   .run()))
      return failure();

  // The grid of every axis, in the module's order: collectives name the
  // tensor axis's position in it.
  OpBuilder builder(module.getBodyRegion());
  if (!SymbolTable::lookupSymbolIn(module, kGridName)) {
    SmallVector<int64_t> shape = llvm::map_to_vector(
        getGridAxes(module), [](const GridAxis &axis) { return axis.size; });
    auto grid =
        shard::GridOp::create(builder, module.getLoc(), kGridName, shape);
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
