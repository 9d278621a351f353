//===- LaminaToGPU.cpp - Functions of fused linear layers on the GPU ------===//

#include "GpuKernels.h"
#include "lamina/Conversion/LaminaToLinalg/EpilogueMath.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lns/IR/Lns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
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
    // (The GPU pipeline fuses no rotary embedding into its layers, and
    // takes blocks inline: lamina-inline-blocks folds their offset bases.)
    if (fused.getRopeCos() || fused.getOffsetBase())
      return std::nullopt;
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
             << value.getType()
             << " (a backward's dW = dyᵀ·x reduces over the rows, which "
                "must then be static)";
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

/// Whether `reduce` is a bias gradient: a sum over all leading dims of one
/// input, of a static last dim, into a zero-filled init (of f32 for bf16 or
/// f16 inputs: their values are extended first).
static bool isColumnSum(linalg::ReduceOp reduce) {
  if (reduce.getInputs().size() != 1 || reduce.getInits().size() != 1)
    return false;
  auto inputType = cast<ShapedType>(reduce.getInputs()[0].getType());
  int64_t rank = inputType.getRank();
  if (rank < 2 || inputType.isDynamicDim(rank - 1) ||
      !llvm::equal(reduce.getDimensions(), llvm::seq<int64_t>(0, rank - 1)))
    return false;
  Block &body = reduce.getCombiner().front();
  Value in = body.getArgument(0);
  auto ops = body.without_terminator();
  if (auto extend = dyn_cast<arith::ExtFOp>(&body.front())) {
    if (extend.getIn() != in)
      return false;
    in = extend.getResult();
    ops = llvm::drop_begin(ops);
  }
  auto add = dyn_cast<arith::AddFOp>(&*ops.begin());
  if (!add || std::next(ops.begin()) != ops.end() ||
      body.getTerminator()->getOperand(0) != add.getResult() ||
      !llvm::is_contained(add->getOperands(), in) ||
      !llvm::is_contained(add->getOperands(), body.getArgument(1)))
    return false;
  auto fill = reduce.getInits()[0].getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.value(), m_AnyZeroFloat());
}

/// An `activation_grad` whose cotangent is a float matmul used only there:
/// it becomes that matmul's epilogue (dH = (dY·W)·act′(p) in one kernel).
static MatmulOp fusableMatmul(ActivationGradOp grad) {
  auto matmul = grad.getCotangent().getDefiningOp<MatmulOp>();
  if (!matmul || !matmul->hasOneUse() || matmul.getType() != grad.getType() ||
      lns::getLnsElementType(matmul.getType()))
    return nullptr;
  return matmul;
}

/// The rounding of an f32 bias gradient to its layer's type, which the
/// column sums store directly; or null.
static arith::TruncFOp roundingOf(linalg::ReduceOp reduce) {
  if (!reduce->hasOneUse())
    return nullptr;
  return dyn_cast<arith::TruncFOp>(*reduce->getUsers().begin());
}

namespace {
/// How convert-lamina-to-gpu lowers one op of a function.
enum class OpRole {
  Layer,          // a matmul kernel (wgmma, mma.sync or LNS)
  Elementwise,    // activation, activation_grad alone, tensor addf/truncf
  FusedIntoLayer, // activation_grad in its matmul's epilogue
  FusedIntoSum,   // truncf of a bias gradient, stored by the column sums
  Transpose,      // a 2-D transpose (the backward's operands)
  ColumnSum,      // a bias gradient
  View,           // collapse_shape: the same buffer
  Init,           // tensor.empty, its sizes, zero fills and constants
};
} // namespace

/// The role of each op of `entry`, or an error on the first op that has no
/// GPU lowering.
static FailureOr<SmallVector<std::pair<Operation *, OpRole>>>
planFunction(Block &entry) {
  SmallVector<std::pair<Operation *, OpRole>> plan;
  DenseSet<Operation *> fusedMatmuls;
  for (auto grad : entry.getOps<ActivationGradOp>())
    if (MatmulOp matmul = fusableMatmul(grad))
      fusedMatmuls.insert(matmul);
  // Inits are checked after the ops that consume them are known.
  DenseSet<Operation *> accepted;
  auto isFloatTensor = [](Value value) {
    return isa<FloatType>(getElementTypeOrSelf(value.getType()));
  };
  for (Operation &op : entry.without_terminator()) {
    std::optional<OpRole> role;
    if (std::optional<LayerView> layer = viewLayer(&op)) {
      if (failed(checkLayer(*layer)))
        return failure();
      role = OpRole::Layer;
    } else if (auto grad = dyn_cast<ActivationGradOp>(op)) {
      if (fusableMatmul(grad))
        role = OpRole::FusedIntoLayer;
      else if (isFloatTensor(grad.getInput()))
        role = OpRole::Elementwise;
    } else if (auto activation = dyn_cast<ActivationOp>(op)) {
      if (isFloatTensor(activation.getInput()))
        role = OpRole::Elementwise;
    } else if (isa<arith::AddFOp, arith::TruncFOp>(op)) {
      // Gradients of a value used twice are summed; f32 bias gradients of
      // bf16 layers rounded.
      auto sum = op.getOperand(0).getDefiningOp<linalg::ReduceOp>();
      if (isa<arith::TruncFOp>(op) && sum && accepted.contains(sum) &&
          roundingOf(sum) == &op)
        role = OpRole::FusedIntoSum;
      else if (isa<RankedTensorType>(op.getResult(0).getType()))
        role = OpRole::Elementwise;
    } else if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
      if (transpose.getPermutation() == ArrayRef<int64_t>{1, 0} &&
          transpose->getNumResults() == 1)
        role = OpRole::Transpose;
    } else if (auto reduce = dyn_cast<linalg::ReduceOp>(op)) {
      if (isColumnSum(reduce) && isFloatTensor(reduce.getInputs()[0]))
        role = OpRole::ColumnSum;
    } else if (isa<tensor::CollapseShapeOp>(op)) {
      role = OpRole::View;
    } else if (isa<tensor::EmptyOp, tensor::DimOp, linalg::FillOp,
                   arith::ConstantOp>(op)) {
      role = OpRole::Init;
    }
    if (!role)
      return op.emitOpError(
          "has no GPU lowering: lamina-gpu-pipeline compiles linear layers "
          "(fused by lamina-decompose and lamina-fuse-epilogues) and their "
          "backward from lamina-generate-backward (transposes, activation "
          "derivatives, bias gradients, sums of gradients); "
          "lamina-cpu-pipeline compiles the rest");
    plan.push_back({&op, *role});
    accepted.insert(&op);
  }
  // An init feeds only the outs of transposes and fills, the sizes of
  // empty tensors and the init of column sums: its value is never read on
  // the device.
  for (auto [op, role] : plan) {
    if (role != OpRole::Init)
      continue;
    for (OpOperand &use : op->getUses()) {
      Operation *user = use.getOwner();
      bool feedsInit =
          (isa<tensor::EmptyOp>(user) && accepted.contains(user)) ||
          (isa<linalg::TransposeOp>(user) && use.getOperandNumber() == 1) ||
          (isa<linalg::FillOp>(user) && accepted.contains(user)) ||
          (isa<linalg::ReduceOp>(user) && use.getOperandNumber() == 1 &&
           accepted.contains(user));
      if (!feedsInit)
        return user->emitOpError(
            "has no GPU lowering for this operand: a constant or init "
            "tensor is only taken as the init of transposes and bias "
            "gradients");
    }
  }
  return plan;
}

/// The dynamic sizes of `type` read from `buffer`, whose dim `sourceDims[d]`
/// (d itself when `sourceDims` is empty) is dim d of `type`.
static SmallVector<Value> dynamicSizesFrom(OpBuilder &b, Location loc,
                                           MemRefType type, Value buffer,
                                           ArrayRef<int64_t> sourceDims) {
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(
          b, loc, buffer, sourceDims.empty() ? d : sourceDims[d]));
  return sizes;
}

/// Rewrites `func` on device buffers, one kernel per layer and per
/// transpose, bias gradient or unfused element-wise op.
static LogicalResult convertFunction(func::FuncOp func, KernelFamily family,
                                     lns::SbdbMode lnsMode) {
  Block &entry = func.getBody().front();
  FailureOr<SmallVector<std::pair<Operation *, OpRole>>> plan =
      planFunction(entry);
  if (failed(plan))
    return failure();
  for (Type type : func.getResultTypes())
    if (!isa<RankedTensorType>(type))
      return func.emitOpError("GPU entry points return tensors only; got ")
             << type;

  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  auto elementTypeOf = [](Value value) -> Type {
    return value ? cast<ShapedType>(value.getType()).getElementType() : Type();
  };
  // Element types are read before arguments become buffers.
  DenseMap<Operation *, std::array<Type, 3>> layerElementTypes;
  for (auto [op, role] : *plan)
    if (role == OpRole::Layer) {
      LayerView view = *viewLayer(op);
      layerElementTypes[op] = {elementTypeOf(view.input),
                               elementTypeOf(view.weight),
                               elementTypeOf(view.bias)};
    }
  for (BlockArgument arg : entry.getArguments())
    if (auto tensor = dyn_cast<RankedTensorType>(arg.getType()))
      arg.setType(bufferTypeOf(tensor));
  auto returnOp = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Value> outParams;
  for (Type type : func.getResultTypes())
    outParams.push_back(
        entry.addArgument(bufferTypeOf(cast<RankedTensorType>(type)), loc));

  // Tensor values become buffers: arguments are their own buffers, a kernel
  // writes straight into the out-parameter of the result it is returned as.
  DenseMap<Value, Value> buffers;
  SmallVector<Value> temporaries;
  OpBuilder b(ctx);
  auto bufferOf = [&](Value value) { return buffers.lookup_or(value, value); };
  // The buffer of `result`: its out-parameter when it is returned, else a
  // temporary whose dynamic dims are those of `source` (dim sourceDims[d],
  // or d, of `source` is dim d of `result`).
  auto outputFor = [&](Value result, Location at, Value source,
                       ArrayRef<int64_t> sourceDims = {}) -> Value {
    Value out;
    for (OpOperand &use : result.getUses())
      if (use.getOwner() == returnOp) {
        out = outParams[use.getOperandNumber()];
        break;
      }
    if (!out) {
      MemRefType type = bufferTypeOf(cast<RankedTensorType>(result.getType()));
      SmallVector<Value> dynamicSizes =
          dynamicSizesFrom(b, at, type, source, sourceDims);
      synchronously(b, at, [&](Value ready) {
        auto alloc = gpu::AllocOp::create(
            b, at, type, ready.getType(), ValueRange{ready}, dynamicSizes,
            ValueRange());
        out = alloc.getMemref();
        return alloc.getAsyncToken();
      });
      temporaries.push_back(out);
    }
    buffers[result] = out;
    return out;
  };

  DenseMap<Operation *, ActivationGradOp> derivativeOf;
  for (auto [op, role] : *plan)
    if (role == OpRole::FusedIntoLayer) {
      auto grad = cast<ActivationGradOp>(op);
      derivativeOf[fusableMatmul(grad)] = grad;
    }

  for (auto [op, role] : *plan) {
    b.setInsertionPoint(op);
    Location opLoc = op->getLoc();
    switch (role) {
    case OpRole::Init:
    case OpRole::FusedIntoLayer:
    case OpRole::FusedIntoSum:
      break;
    case OpRole::View: {
      auto collapse = cast<tensor::CollapseShapeOp>(op);
      buffers[collapse.getResult()] = memref::CollapseShapeOp::create(
          b, opLoc, bufferOf(collapse.getSrc()),
          collapse.getReassociationIndices());
      break;
    }
    case OpRole::Transpose: {
      auto transpose = cast<linalg::TransposeOp>(op);
      Value source = bufferOf(transpose.getInput());
      Value target =
          outputFor(transpose->getResult(0), opLoc, source, {1, 0});
      emitTranspose(b, opLoc, op, source, target);
      break;
    }
    case OpRole::ColumnSum: {
      auto reduce = cast<linalg::ReduceOp>(op);
      Value source = flattenRows(b, opLoc, bufferOf(reduce.getInputs()[0]));
      arith::TruncFOp rounding = roundingOf(reduce);
      Value target = outputFor(
          rounding ? rounding.getResult() : reduce->getResult(0), opLoc,
          source);
      emitColumnSum(b, opLoc, op, source, target);
      break;
    }
    case OpRole::Elementwise: {
      Value result = op->getResult(0);
      SmallVector<Value> sources;
      for (Value operand : op->getOperands())
        sources.push_back(bufferOf(operand));
      Value target = outputFor(result, opLoc, sources[0]);
      if (isa<arith::TruncFOp>(op)) {
        // Loads extend to f32, stores round to the target's type.
        emitElementwise(
            b, opLoc, sources, target,
            [](OpBuilder &, Location, ValueRange args) { return args[0]; });
      } else if (isa<arith::AddFOp>(op)) {
        emitElementwise(b, opLoc, sources, target,
                        [&](OpBuilder &nb, Location nloc, ValueRange args) {
                          return arith::AddFOp::create(nb, nloc, args[0],
                                                       args[1]);
                        });
      } else if (auto grad = dyn_cast<ActivationGradOp>(op)) {
        ActivationKind kind = grad.getKind();
        emitElementwise(b, opLoc, sources, target,
                        [&](OpBuilder &nb, Location nloc, ValueRange args) {
                          return buildActivationDerivative(nb, nloc, kind,
                                                           args[0], args[1]);
                        });
      } else {
        ActivationKind kind = cast<ActivationOp>(op).getKind();
        emitElementwise(b, opLoc, sources, target,
                        [&](OpBuilder &nb, Location nloc, ValueRange args) {
                          return buildActivation(nb, nloc, kind, args[0]);
                        });
      }
      break;
    }
    case OpRole::Layer: {
      LayerView view = *viewLayer(op);
      std::array<Type, 3> elts = layerElementTypes.lookup(op);
      ActivationGradOp grad = derivativeOf.lookup(op);
      Value result = grad ? Value(grad.getResult()) : op->getResult(0);
      Value inputBuffer = bufferOf(view.input);
      // The result's leading dims are the input's.
      Value out = outputFor(result, opLoc, inputBuffer);
      Value input = flattenRows(b, opLoc, inputBuffer);
      auto inputShape = cast<MemRefType>(input.getType()).getShape();
      GpuLinear layer{};
      layer.op = op;
      layer.activation = view.activation;
      layer.dropout = view.dropout;
      if (grad) {
        layer.derivative = grad.getKindAttr();
        layer.derivativeInput =
            flattenRows(b, opLoc, bufferOf(grad.getInput()));
      }
      layer.input = input;
      layer.weight = bufferOf(view.weight);
      layer.bias = view.bias ? bufferOf(view.bias) : Value();
      layer.output = flattenRows(b, opLoc, out);
      layer.seed = view.seed;
      layer.m = inputShape[0];
      layer.n = cast<RankedTensorType>(result.getType()).getShape().back();
      layer.k = inputShape[1];
      layer.rows =
          ShapedType::isDynamic(layer.m)
              ? memref::DimOp::create(b, opLoc, input, 0).getResult()
              : arith::ConstantIndexOp::create(b, opLoc, layer.m).getResult();
      layer.inputElt = elts[0];
      layer.weightElt = elts[1];
      layer.biasElt = elts[2];
      LogicalResult emitted =
          isa<lns::NumType>(elts[0])
              ? emitLnsLinear(b, opLoc, layer, view.sbdb.value_or(lnsMode))
          : family == KernelFamily::Wgmma ? emitWgmmaLinear(b, opLoc, layer)
                                          : emitMmaSyncLinear(b, opLoc, layer);
      if (failed(emitted))
        return failure();
      break;
    }
    }
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
  // Users before producers: every tensor op of the plan is now dead.
  for (auto [op, role] : llvm::reverse(*plan)) {
    op->dropAllUses();
    op->erase();
  }

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
    // Every function of lamina or lns ops is a program: one that cannot
    // run on the GPU gets a diagnostic, not a silent CPU leftover.
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && llvm::any_of(func.getOps(), [](Operation &op) {
            return isa_and_present<LaminaDialect, lns::LnsDialect>(
                op.getDialect());
          }))
        functions.push_back(func);
    for (func::FuncOp func : functions)
      if (failed(convertFunction(func, *family, *lnsMode)))
        return signalPassFailure();
  }
};
} // namespace
