//===- ShardToLaminaMPI.cpp - Collectives as calls of Lamina's MPI runtime ===//

#include "lamina/Conversion/Passes.h"

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
    auto sourceType = cast<RankedTensorType>(source.getType());
    auto sourceBuffer = bufferization::ToBufferOp::create(
        b, loc,
        MemRefType::get(sourceType.getShape(), sourceType.getElementType()),
        source, /*read_only=*/true);
    auto resultBuffer = memref::AllocOp::create(
        b, loc,
        MemRefType::get(resultType.getShape(), resultType.getElementType()));
    auto unranked = UnrankedMemRefType::get(sourceType.getElementType(), 0);
    SmallVector<Value> operands = {
        memref::CastOp::create(b, loc, unranked, sourceBuffer),
        memref::CastOp::create(b, loc, unranked, resultBuffer)};
    for (int64_t value : extra)
      operands.push_back(arith::ConstantIntOp::create(b, loc, value, 64));
    func::CallOp::create(b, loc, declare(b, name, operands), operands);
    return bufferization::ToTensorOp::create(b, loc, resultType, resultBuffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }

  /// `laminaMpiRank()` as an index.
  Value rank(OpBuilder &b, Location loc) {
    auto call = func::CallOp::create(
        b, loc, declare(b, "laminaMpiRank", {}, b.getI64Type()), ValueRange{});
    return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      call.getResult(0));
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
  Value replacement;
  if (auto rank = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
    replacement = runtime.rank(b, loc);
  } else if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    FailureOr<StringRef> name = allReduceName(op, allReduce.getReduction());
    if (failed(name))
      return failure();
    if (allReduce.getInput().getType() != allReduce.getType())
      return op->emitOpError("changes the element type; Lamina's MPI "
                             "runtime reduces in the operand's type");
    replacement =
        callRuntime(*name, allReduce.getInput(), allReduce.getType(), {});
  } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
    replacement = callRuntime(
        "AllGather", gather.getInput(), gather.getResult().getType(),
        {static_cast<int64_t>(gather.getGatherAxis().getZExtValue())});
  } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    if (failed(checkSum(op, scatter.getReduction())))
      return failure();
    replacement = callRuntime(
        "ReduceScatter", scatter.getInput(), scatter.getResult().getType(),
        {static_cast<int64_t>(scatter.getScatterAxis().getZExtValue())});
  } else if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
    if (failed(checkTensor(slice.getInput())))
      return failure();
    // No communication: the process keeps its block of the axis.
    auto resultType = cast<RankedTensorType>(slice.getResult().getType());
    int64_t axis = slice.getSliceAxis().getZExtValue();
    int64_t block = resultType.getDimSize(axis);
    SmallVector<OpFoldResult> offsets(resultType.getRank(), b.getIndexAttr(0));
    Value start = arith::MulIOp::create(
        b, loc, runtime.rank(b, loc),
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
                           "all_slice and process_linear_index are)");
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
    module.walk([&](Operation *op) {
      if (!isa_and_nonnull<shard::ShardDialect>(op->getDialect()))
        return;
      (isa<shard::GridOp>(op) ? grids : shardOps).push_back(op);
    });
    bool failed = false;
    for (Operation *op : shardOps)
      failed |= mlir::failed(lowerShardOp(op, runtime));
    if (failed)
      return signalPassFailure();
    for (Operation *grid : grids)
      grid->erase();
  }
};
} // namespace
