//===- ShardToLaminaMPI.cpp - Collectives as calls of Lamina's MPI runtime ===//

#include "lamina/Conversion/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Runtime/MpiRuntime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"


namespace mlir::lamina {
#define GEN_PASS_DEF_CONVERTSHARDTOLAMINAMPI
#include "lamina/Conversion/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using mlir::lamina::ReduceReplicasOp;

namespace {
/// Emits runtime calls, declaring each runtime function once.
class RuntimeCallBuilder {
public:
  explicit RuntimeCallBuilder(ModuleOp module) : module(module) {}

  /// The runtime's suffix for `type` (f32, f64, f16, bf16, i64), or empty.
  static StringRef suffix(Type type) {
    if (type.isF32())
      return "f32";
    if (type.isF64())
      return "f64";
    if (type.isF16())
      return "f16";
    if (type.isBF16())
      return "bf16";
    if (type.isInteger(64))
      return "i64";
    return "";
  }

  /// `name(source buffer, result buffer, extra i64 arguments...)` on
  /// `source`, returning the result tensor of type `resultType`.
  Value callOnTensor(OpBuilder &b, Location loc, StringRef name, Value source,
                     RankedTensorType resultType, ArrayRef<int64_t> extra) {
    Value sourceBuffer = toBuffer(b, loc, source);
    Value resultBuffer = allocate(b, loc, resultType);
    SmallVector<Value> operands = {unranked(b, loc, sourceBuffer),
                                   unranked(b, loc, resultBuffer)};
    for (int64_t value : extra)
      operands.push_back(arith::ConstantIntOp::create(b, loc, value, 64));
    call(b, loc, name, operands);
    return asTensor(b, loc, resultBuffer, resultType);
  }

  /// `tensor`'s buffer, read only.
  Value toBuffer(OpBuilder &b, Location loc, Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    return bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, /*read_only=*/true);
  }

  /// `tensor`'s buffer, read only, as an unranked memref.
  Value readBuffer(OpBuilder &b, Location loc, Value tensor) {
    return unranked(b, loc, toBuffer(b, loc, tensor));
  }

  /// A fresh buffer for a tensor of `type`.
  Value allocate(OpBuilder &b, Location loc, RankedTensorType type) {
    return memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  }

  Value unranked(OpBuilder &b, Location loc, Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    return memref::CastOp::create(
        b, loc, UnrankedMemRefType::get(type.getElementType(), 0), buffer);
  }

  /// The tensor a runtime call wrote into `buffer`.
  Value asTensor(OpBuilder &b, Location loc, Value buffer,
                 RankedTensorType type) {
    return bufferization::ToTensorOp::create(b, loc, type, buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }

  /// Calls the runtime function `name` (declared on first use), returning
  /// its result, if `result` is given.
  Value call(OpBuilder &b, Location loc, StringRef name, ValueRange operands,
             Type result = {}) {
    auto op = func::CallOp::create(b, loc, declare(b, name, operands, result),
                                   operands);
    return result ? op.getResult(0) : Value();
  }

  /// The process's rank on the runtime's grid axis `axis`, as an index.
  Value rank(OpBuilder &b, Location loc, int64_t axis) {
    Value operand = arith::ConstantIntOp::create(b, loc, axis, 64);
    Value rank = call(b, loc, "laminaMpiAxisRank", operand, b.getI64Type());
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), rank);
  }

private:
  func::FuncOp declare(OpBuilder &b, StringRef name, ValueRange operands,
                       Type result = {}) {
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto type = FunctionType::get(b.getContext(), operands.getTypes(),
                                  result ? TypeRange(result) : TypeRange());
    auto function = func::FuncOp::create(b, module.getLoc(), name, type);
    function.setPrivate();
    return function;
  }

  ModuleOp module;
};
} // namespace

/// `lamina.reduce_replicas` as a reduction over the data axis that starts
/// where the op stands and completes right before the result's first use:
/// the ops in between overlap it. The start copies the operand, and the
/// result's buffer is allocated at the wait: only the handle travels from
/// one to the other (no buffer leaves a repeated block the start is in).
static LogicalResult lowerReduceReplicas(ReduceReplicasOp op,
                                         RuntimeCallBuilder &runtime) {
  auto type = cast<RankedTensorType>(op.getType());
  if (!type.hasStaticShape())
    return op->emitOpError("needs a statically shaped tensor operand");
  StringRef suffix = RuntimeCallBuilder::suffix(type.getElementType());
  Location loc = op.getLoc();
  OpBuilder b(op);
  int64_t root = op.getRoot() ? int64_t(*op.getRoot()) : -1;
  Value startRoot = arith::ConstantIntOp::create(b, loc, root, 64);
  Value handle = runtime.call(
      b, loc, ("laminaMpiReplicaReduceStart_" + suffix).str(),
      {runtime.readBuffer(b, loc, op.getInput()), startRoot}, b.getI64Type());
  Block *block = op->getBlock();
  Operation *firstUse = block->getTerminator();
  for (Operation *user : op->getUsers())
    if (Operation *inBlock = block->findAncestorOpInBlock(*user))
      if (inBlock->isBeforeInBlock(firstUse))
        firstUse = inBlock;
  b.setInsertionPoint(firstUse);
  Value result = runtime.allocate(b, loc, type);
  runtime.call(b, loc, ("laminaMpiReplicaReduceWait_" + suffix).str(),
               {handle, runtime.unranked(b, loc, result),
                arith::ConstantIntOp::create(b, loc, root, 64),
                arith::ConstantIntOp::create(b, loc, op.getMean() ? 1 : 0,
                                             64)});
  op.getResult().replaceAllUsesWith(
      runtime.asTensor(b, loc, result, type));
  op->erase();
  return success();
}

/// The runtime's grid axis (an MpiAxis value: data 0, pipeline 1, tensor 2)
/// of the one grid axis a shard op acts on: named by the module's
/// `lamina.grid`, else the one axis of a world of `lamina.world_size` ranks,
/// which is the tensor axis.
static FailureOr<int64_t> getRuntimeAxis(Operation *op,
                                         ArrayRef<int16_t> gridAxes) {
  if (gridAxes.size() != 1)
    return op->emitOpError("acts on ")
           << gridAxes.size()
           << " grid axes; Lamina's MPI runtime communicates along one";
  SmallVector<lamina::GridAxis> axes = lamina::getGridAxes(op);
  int16_t index = gridAxes.front();
  if (axes.empty()) {
    if (index != 0)
      return op->emitOpError("acts on grid axis ")
             << index << " of a one-axis grid";
    return static_cast<int64_t>(lamina::MpiAxis::Tensor);
  }
  if (index < 0 || index >= static_cast<int16_t>(axes.size()))
    return op->emitOpError("acts on grid axis ")
           << index << ", but the module's grid has " << axes.size()
           << " axes";
  StringRef name = axes[index].name.getValue();
  std::optional<lamina::MpiAxis> runtimeAxis = lamina::getMpiAxisNamed(name);
  if (!runtimeAxis)
    return op->emitOpError("acts on grid axis '")
           << name
           << "', which has no communicator in Lamina's MPI runtime (dp, "
              "pp and tp have)";
  return static_cast<int64_t>(*runtimeAxis);
}

static LogicalResult checkSum(Operation *op, shard::ReductionKind kind) {
  if (kind == shard::ReductionKind::Sum)
    return success();
  return op->emitOpError("reduces with '")
         << shard::stringifyReductionKind(kind)
         << "'; Lamina's MPI runtime reduce-scatters sums only";
}

/// The runtime's all-reduce for `kind`: sums and maxima.
static FailureOr<StringRef> allReduceName(Operation *op,
                                          shard::ReductionKind kind) {
  if (kind == shard::ReductionKind::Sum)
    return StringRef("AllReduce");
  if (kind == shard::ReductionKind::Max)
    return StringRef("AllReduceMax");
  return op->emitOpError("reduces with '")
         << shard::stringifyReductionKind(kind)
         << "'; Lamina's MPI runtime all-reduces sums and maxima only";
}

/// Lowers one op of the shard dialect; failure after an error for any op
/// Lamina does not lower.
static LogicalResult lowerShardOp(Operation *op, RuntimeCallBuilder &runtime) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto checkTensor = [&](Value value) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (type && type.hasStaticShape())
      return success();
    return op->emitOpError("needs a statically shaped tensor operand");
  };
  // `laminaMpi<name>_<element type>(input, result, extra...)`.
  auto callRuntime = [&](StringRef name, Value input, Type resultType,
                         ArrayRef<int64_t> extra) -> Value {
    if (failed(checkTensor(input)))
      return {};
    StringRef suffix = RuntimeCallBuilder::suffix(
        cast<RankedTensorType>(input.getType()).getElementType());
    if (suffix.empty()) {
      op->emitOpError("has an element type Lamina's MPI runtime does not "
                      "communicate");
      return {};
    }
    return runtime.callOnTensor(b, loc, ("laminaMpi" + name + "_" + suffix).str(),
                                input, cast<RankedTensorType>(resultType),
                                extra);
  };
  // The runtime's grid axis of a collective or rank query.
  auto runtimeAxis = [&](ArrayRef<int16_t> gridAxes) {
    return getRuntimeAxis(op, gridAxes);
  };
  Value replacement;
  if (isa<shard::ProcessLinearIndexOp>(op)) {
    // The linear index of a one-axis grid: the rank on it.
    if (lamina::getGridAxes(op).size() > 1)
      return op->emitOpError("is the linear index of a grid of several "
                             "axes; Lamina's MPI runtime answers ranks per "
                             "axis (shard.process_multi_index)");
    FailureOr<int64_t> axis = runtimeAxis({0});
    if (failed(axis))
      return failure();
    replacement = runtime.rank(b, loc, *axis);
  } else if (auto index = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
    FailureOr<int64_t> axis = runtimeAxis(index.getAxes());
    if (failed(axis))
      return failure();
    replacement = runtime.rank(b, loc, *axis);
  } else if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    FailureOr<StringRef> name = allReduceName(op, allReduce.getReduction());
    FailureOr<int64_t> axis = runtimeAxis(allReduce.getGridAxes());
    if (failed(name) || failed(axis))
      return failure();
    if (allReduce.getInput().getType() != allReduce.getType())
      return op->emitOpError("changes the element type; Lamina's MPI "
                             "runtime reduces in the operand's type");
    replacement =
        callRuntime(*name, allReduce.getInput(), allReduce.getType(), {*axis});
  } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
    FailureOr<int64_t> axis = runtimeAxis(gather.getGridAxes());
    if (failed(axis))
      return failure();
    replacement = callRuntime(
        "AllGather", gather.getInput(), gather.getResult().getType(),
        {static_cast<int64_t>(gather.getGatherAxis().getZExtValue()), *axis});
  } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    FailureOr<int64_t> axis = runtimeAxis(scatter.getGridAxes());
    if (failed(checkSum(op, scatter.getReduction())) || failed(axis))
      return failure();
    replacement = callRuntime(
        "ReduceScatter", scatter.getInput(), scatter.getResult().getType(),
        {static_cast<int64_t>(scatter.getScatterAxis().getZExtValue()),
         *axis});
  } else if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
    FailureOr<int64_t> gridAxis = runtimeAxis(slice.getGridAxes());
    if (failed(checkTensor(slice.getInput())) || failed(gridAxis))
      return failure();
    // No communication: the process keeps its block of the axis.
    auto resultType = cast<RankedTensorType>(slice.getResult().getType());
    int64_t axis = slice.getSliceAxis().getZExtValue();
    int64_t block = resultType.getDimSize(axis);
    SmallVector<OpFoldResult> offsets(resultType.getRank(), b.getIndexAttr(0));
    Value start = arith::MulIOp::create(
        b, loc, runtime.rank(b, loc, *gridAxis),
        arith::ConstantIndexOp::create(b, loc, block));
    offsets[axis] = start;
    SmallVector<OpFoldResult> sizes;
    for (int64_t size : resultType.getShape())
      sizes.push_back(b.getIndexAttr(size));
    SmallVector<OpFoldResult> strides(resultType.getRank(), b.getIndexAttr(1));
    replacement = tensor::ExtractSliceOp::create(
        b, loc, resultType, slice.getInput(), offsets, sizes, strides);
  } else {
    return op->emitOpError("is a collective Lamina does not lower to MPI "
                           "(all_reduce, all_gather, reduce_scatter, "
                           "all_slice, process_linear_index and "
                           "process_multi_index are)");
  }
  if (!replacement)
    return failure();
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
  return success();
}

namespace {
struct ConvertShardToLaminaMPIPass
    : mlir::lamina::impl::ConvertShardToLaminaMPIBase<
          ConvertShardToLaminaMPIPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    RuntimeCallBuilder runtime(module);
    SmallVector<Operation *> shardOps, grids;
    SmallVector<ReduceReplicasOp> replicaReductions;
    module.walk([&](Operation *op) {
      if (auto reduce = dyn_cast<ReduceReplicasOp>(op))
        replicaReductions.push_back(reduce);
      if (!isa_and_nonnull<shard::ShardDialect>(op->getDialect()))
        return;
      (isa<shard::GridOp>(op) ? grids : shardOps).push_back(op);
    });
    bool failed = false;
    for (Operation *op : shardOps)
      failed |= mlir::failed(lowerShardOp(op, runtime));
    for (ReduceReplicasOp op : replicaReductions)
      failed |= mlir::failed(lowerReduceReplicas(op, runtime));
    if (failed)
      return signalPassFailure();
    for (Operation *grid : grids)
      grid->erase();
  }
};
} // namespace
