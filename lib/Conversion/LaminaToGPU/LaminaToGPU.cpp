//===- LaminaToGPU.cpp - Functions of fused linear layers on the GPU ------===//

#include "GpuKernels.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lns/IR/Lns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_CONVERTLAMINATOGPU
#include "lamina/Conversion/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

using KernelFamily = GpuKernelFamily;

/// LNS codes live in device memory as their packed i64 codes.
static MemRefType bufferTypeOf(RankedTensorType type) {
  Type elt = type.getElementType();
  if (isa<lns::NumType>(elt))
    elt = IntegerType::get(type.getContext(), 64);
  return MemRefType::get(type.getShape(), elt);
}

namespace {
/// What the GPU lowering reads from a layer: a `fused_linear`, a bare
/// `matmul` (a linear layer without bias, whose epilogue is empty), or an
/// `lns.linear`, whose own sbdb mode wins over the pass option.
struct LayerView {
  Operation *op;
  Value input, weight, bias, seed, rank;
  SyncAttr sync;
  ActivationKindAttr activation;
  DropoutAttr dropout;
  std::optional<lns::SbdbMode> sbdb;
};
} // namespace

static std::optional<LayerView> viewLayer(Operation *op) {
  LayerView view{};
  view.op = op;
  if (auto fused = dyn_cast<FusedLinearOp>(op)) {
    LinearLayerParts parts =
        cast<LinearLayerOpInterface>(fused.getOperation()).getLayerParts();
    view.input = parts.input;
    view.weight = parts.weight;
    view.bias = parts.bias;
    view.seed = parts.seed;
    view.rank = parts.rank;
    view.sync = parts.sync;
    view.activation = parts.activation;
    view.dropout = parts.dropout;
    return view;
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    view.input = matmul.getInput();
    view.weight = matmul.getWeight();
    return view;
  }
  if (auto linear = dyn_cast<lns::LinearOp>(op)) {
    view.input = linear.getInput();
    view.weight = linear.getWeight();
    view.bias = linear.getBias();
    view.sbdb = linear.getSbdb();
    return view;
  }
  return std::nullopt;
}

/// Why `layer` cannot become a kernel, or success.
static LogicalResult checkLayer(const LayerView &layer) {
  Operation *op = layer.op;
  // Rows (the leading dims of the input and result) may be dynamic; K, N,
  // the weight and the bias fix the kernel.
  for (Value value : {layer.weight, layer.bias})
    if (value && !cast<RankedTensorType>(value.getType()).hasStaticShape())
      return op->emitOpError("GPU kernels need static weights and biases; "
                             "got ")
             << value.getType();
  for (Value value : {layer.input, Value(op->getResult(0))})
    if (ShapedType::isDynamic(
            cast<RankedTensorType>(value.getType()).getShape().back()))
      return op->emitOpError("GPU kernels need a static last dimension (K "
                             "and N); only the leading dims may be dynamic");
  if (layer.sync)
    return op->emitOpError(
        "has a sync point: lamina-gpu-pipeline runs single-GPU programs "
        "(collectives on GPU buffers are not generated)");
  if (layer.rank)
    return op->emitOpError("belongs to a partitioned program: "
                           "lamina-gpu-pipeline runs single-GPU programs");
  auto inputType = cast<RankedTensorType>(layer.input.getType());
  if (inputType.getRank() < 2)
    return op->emitOpError("GPU kernels take inputs of rank 2 or more; got ")
           << inputType;
  if (lns::getLnsElementType(inputType))
    return success();
  Type elt = inputType.getElementType();
  Type weightElt =
      cast<RankedTensorType>(layer.weight.getType()).getElementType();
  if (!isa<BFloat16Type, Float16Type>(elt) || weightElt != elt)
    return op->emitOpError("tensor-core kernels take bf16 or f16 inputs and "
                           "weights of one type; got ")
           << elt << " and " << weightElt;
  int64_t k = inputType.getShape().back();
  if (k % 8 != 0)
    return op->emitOpError("the reduction size (")
           << k << ") must be a multiple of 8: rows of x and W are copied "
           << "in 16-byte units";
  int64_t n =
      cast<RankedTensorType>(op->getResult(0).getType()).getShape().back();
  if (n % 8 != 0)
    return op->emitOpError("the output width (")
           << n << ") must be a multiple of 8 (16-byte weight tiles)";
  return success();
}

/// The dynamic leading dims of `buffer` [..., K]: those of a layer's result
/// [..., N] too.
static SmallVector<Value> dynamicRowSizes(OpBuilder &b, Location loc,
                                          Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(b, loc, buffer, d));
  return sizes;
}

/// `buffer` [..., K] as a 2-D [M, K] view.
static Value flattenRows(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 2)
    return buffer;
  ReassociationIndices rows;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    rows.push_back(d);
  return memref::CollapseShapeOp::create(
      b, loc, buffer,
      ArrayRef<ReassociationIndices>{rows, {type.getRank() - 1}});
}

/// `step(ready)` (an async GPU op after token `ready`, returning its token)
/// between a fresh stream and a wait for it: gpu-to-llvm lowers only the
/// async forms of alloc, dealloc and memcpy.
static void synchronously(OpBuilder &b, Location loc,
                          function_ref<Value(Value)> step) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value ready =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange()).getAsyncToken();
  gpu::WaitOp::create(b, loc, Type(), ValueRange{step(ready)});
}

/// Rewrites `func` on device buffers, one kernel per layer.
static LogicalResult convertFunction(func::FuncOp func, KernelFamily family,
                                     lns::SbdbMode lnsMode) {
  Block &entry = func.getBody().front();
  SmallVector<LayerView> layers;
  for (Operation &op : entry) {
    if (std::optional<LayerView> layer = viewLayer(&op)) {
      if (failed(checkLayer(*layer)))
        return failure();
      layers.push_back(*layer);
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    return op.emitOpError(
        "has no GPU lowering: lamina-gpu-pipeline compiles functions of "
        "fused linear layers (after lamina-decompose and "
        "lamina-fuse-epilogues)");
  }
  for (Type type : func.getResultTypes())
    if (!isa<RankedTensorType>(type))
      return func.emitOpError("GPU entry points return tensors only; got ")
             << type;

  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  auto elementTypeOf = [](Value value) -> Type {
    return value ? cast<ShapedType>(value.getType()).getElementType() : Type();
  };
  SmallVector<std::array<Type, 3>> elementTypes;
  for (const LayerView &layer : layers)
    elementTypes.push_back({elementTypeOf(layer.input),
                            elementTypeOf(layer.weight),
                            elementTypeOf(layer.bias)});
  for (BlockArgument arg : entry.getArguments())
    if (auto tensor = dyn_cast<RankedTensorType>(arg.getType()))
      arg.setType(bufferTypeOf(tensor));
  auto returnOp = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Value> outParams;
  for (Type type : func.getResultTypes())
    outParams.push_back(
        entry.addArgument(bufferTypeOf(cast<RankedTensorType>(type)), loc));

  // Tensor values become buffers: arguments are their own buffers, a layer
  // writes straight into the out-parameter of the result it is returned as.
  DenseMap<Value, Value> buffers;
  SmallVector<Value> temporaries;
  OpBuilder b(ctx);
  auto bufferOf = [&](Value value) { return buffers.lookup_or(value, value); };
  for (auto [view, elts] : llvm::zip_equal(layers, elementTypes)) {
    Operation *op = view.op;
    Value result = op->getResult(0);
    b.setInsertionPoint(op);
    Location opLoc = op->getLoc();
    Value out;
    Value inputBuffer = bufferOf(view.input);
    for (OpOperand &use : result.getUses())
      if (use.getOwner() == returnOp) {
        out = outParams[use.getOperandNumber()];
        break;
      }
    if (!out) {
      synchronously(b, opLoc, [&](Value ready) {
        auto alloc = gpu::AllocOp::create(
            b, opLoc, bufferTypeOf(cast<RankedTensorType>(result.getType())),
            ready.getType(), ValueRange{ready},
            dynamicRowSizes(b, opLoc, inputBuffer), ValueRange());
        out = alloc.getMemref();
        return alloc.getAsyncToken();
      });
      temporaries.push_back(out);
    }
    buffers[result] = out;

    Value input = flattenRows(b, opLoc, bufferOf(view.input));
    auto inputShape = cast<MemRefType>(input.getType()).getShape();
    Value rows = ShapedType::isDynamic(inputShape[0])
                     ? memref::DimOp::create(b, opLoc, input, 0).getResult()
                     : arith::ConstantIndexOp::create(b, opLoc, inputShape[0])
                           .getResult();
    GpuLinear layer{op,
                    view.activation,
                    view.dropout,
                    input,
                    bufferOf(view.weight),
                    view.bias ? bufferOf(view.bias) : Value(),
                    flattenRows(b, opLoc, out),
                    view.seed,
                    inputShape[0],
                    cast<RankedTensorType>(result.getType()).getShape().back(),
                    inputShape[1],
                    rows,
                    elts[0],
                    elts[1],
                    elts[2]};
    LogicalResult emitted =
        isa<lns::NumType>(elts[0])
            ? emitLnsLinear(b, opLoc, layer, view.sbdb.value_or(lnsMode))
        : family == KernelFamily::Wgmma ? emitWgmmaLinear(b, opLoc, layer)
                                        : emitMmaSyncLinear(b, opLoc, layer);
    if (failed(emitted))
      return failure();
  }

  b.setInsertionPoint(returnOp);
  for (auto [value, outParam] : llvm::zip(returnOp.getOperands(), outParams)) {
    Value source = bufferOf(value), target = outParam;
    if (source != target)
      synchronously(b, loc, [&](Value ready) {
        return gpu::MemcpyOp::create(b, loc, ready.getType(), ValueRange{ready},
                                     target, source)
            .getAsyncToken();
      });
  }
  for (Value temporary : temporaries)
    synchronously(b, loc, [&](Value ready) {
      return gpu::DeallocOp::create(b, loc, ready.getType(), ValueRange{ready},
                                    temporary)
          .getAsyncToken();
    });
  func::ReturnOp::create(b, loc);
  returnOp.erase();
  for (const LayerView &layer : llvm::reverse(layers))
    layer.op->erase();

  func.setType(FunctionType::get(ctx, entry.getArgumentTypes(), {}));
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(ctx));
  return success();
}

/// Longest vector lamina-gpu-pipeline takes: a vector lives in a thread's
/// registers (255 of 32 bits), and LLVM's NVPTX back end scalarizes longer
/// ones element by element (vector<65536xf64> took minutes; absurd sizes
/// ran out of memory).
static constexpr int64_t kMaxGpuVectorElements = 1024;

/// What the NVVM translation cannot handle in input IR, reported on the op
/// instead of crashing LLVM: ops directly in a gpu.module that are neither
/// functions nor globals, and vectors longer than kMaxGpuVectorElements.
static LogicalResult checkTranslatable(ModuleOp module) {
  WalkResult result = module.walk<WalkOrder::PreOrder>(
      [](Operation *op) -> WalkResult {
    if (auto kernels = dyn_cast_or_null<gpu::GPUModuleOp>(op->getParentOp()))
      if (!isa<SymbolOpInterface>(op)) {
        op->emitOpError("is directly in gpu.module @")
            << kernels.getName()
            << ": only functions and globals there can be translated to "
               "PTX; put it inside a kernel";
        return WalkResult::interrupt();
      }
    auto tooLong = [](Type type) {
      auto vector = dyn_cast<VectorType>(type);
      return vector && vector.getNumElements() > kMaxGpuVectorElements;
    };
    SmallVector<Type> types(op->getResultTypes());
    llvm::append_range(types, op->getOperandTypes());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        llvm::append_range(types, block.getArgumentTypes());
    if (auto function = dyn_cast<FunctionOpInterface>(op))
      llvm::append_range(types, function.getArgumentTypes());
    for (Type type : types)
      if (tooLong(type)) {
        op->emitOpError("uses ")
            << type << ", longer than the " << kMaxGpuVectorElements
            << " elements lamina-gpu-pipeline takes (a vector lives in a "
               "thread's registers)";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct ConvertLaminaToGPUPass
    : lamina::impl::ConvertLaminaToGPUBase<ConvertLaminaToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkTranslatable(module)))
      return signalPassFailure();
    std::optional<KernelFamily> family = lookupGpuChip(chip);
    if (!family) {
      module.emitError() << "unknown GPU chip '" << chip << "': expected "
                         << describeGpuChips();
      return signalPassFailure();
    }
    std::optional<lns::SbdbMode> lnsMode = lns::symbolizeSbdbMode(lnsSbdb);
    if (!lnsMode) {
      module.emitError() << "unknown lns-sbdb mode '" << lnsSbdb
                         << "': expected ideal or table";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> functions;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && llvm::any_of(func.getOps(), [](Operation &op) {
            return viewLayer(&op);
          }))
        functions.push_back(func);
    for (func::FuncOp func : functions)
      if (failed(convertFunction(func, *family, *lnsMode)))
        return signalPassFailure();
  }
};
} // namespace
