//===- Autocast.cpp - Layer matmuls in bf16, as torch.autocast --------------===//
//
// torch.autocast("cpu", dtype=torch.bfloat16) casts the operands of its
// "lower precision" ops (linear, matmul) to bf16 and leaves f32 parameters
// as they are: the master weights. Here each f32 layer matmul (the linear
// family, fused_qkv, lamina.matmul) takes truncf'd operands, computes in
// bf16 with f32 accumulation and its epilogue in f32, and rounds its result
// to bf16, as the eager op does; the result is widened back to f32 for the
// ops after it, which therefore compute in f32 (PyTorch's "fp32" ops, and
// at least the precision of the others). Between two layers the widening
// and the next truncation fold away. Attention's plain matmuls (linalg.matmul
// and batch_matmul, eager's torch.matmul) compute on operands rounded to
// bf16 and widened back, their results rounded to bf16 likewise.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAAUTOCAST
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// `type` with `element` for elements if it is an f32 tensor, else null.
static RankedTensorType narrowed(Type type, Type element) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.getElementType().isF32())
    return {};
  return tensor.clone(element);
}

/// The ops torch.autocast runs in lower precision, among Lamina's.
static bool isLowerPrecisionOp(Operation *op) {
  return isa<LinearLayerOpInterface, FusedQKVOp, MatmulOp>(op);
}

/// Whether every float tensor `op` takes or gives is f32 (not LNS, not
/// already narrow).
static bool isAllF32(Operation *op) {
  auto isF32OrNotFloat = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return !tensor || !isa<FloatType>(tensor.getElementType()) ||
           tensor.getElementType().isF32();
  };
  auto isFloatTensor = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && isa<FloatType>(tensor.getElementType());
  };
  return llvm::all_of(op->getOperandTypes(), isF32OrNotFloat) &&
         llvm::all_of(op->getResultTypes(), isF32OrNotFloat) &&
         llvm::any_of(op->getResultTypes(), isFloatTensor);
}

/// Whether `op` is a plain matmul of tensors (linalg.matmul or
/// batch_matmul, default maps) on f32: attention's `q @ k.T` and `att @ v`,
/// which torch.autocast also runs in lower precision.
static bool isTensorMatmul(Operation *op) {
  auto hasUserDefinedMaps = [](auto matmul) {
    return matmul && matmul.hasUserDefinedMaps();
  };
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
      !linalgOp.hasPureTensorSemantics() || linalgOp.getNumDpsInputs() != 2 ||
      hasUserDefinedMaps(dyn_cast<linalg::MatmulOp>(op)) ||
      hasUserDefinedMaps(dyn_cast<linalg::BatchMatmulOp>(op)))
    return false;
  return isAllF32(op);
}

/// `value` truncated to `type`, once: right after its definition, where
/// every later user can share it (a weight read by several layers, an
/// input by a layer and a matmul).
static Value truncateOnce(Value value, RankedTensorType type,
                          DenseMap<Value, Value> &truncated) {
  Value &narrow = truncated[value];
  if (!narrow) {
    OpBuilder builder(value.getContext());
    builder.setInsertionPointAfterValue(value);
    narrow = arith::TruncFOp::create(builder, value.getLoc(), type, value);
  }
  return narrow;
}

/// `op` on `element` operands, its results widened back to f32.
static void castOp(Operation *op, Type element,
                   DenseMap<Value, Value> &truncated) {
  OpBuilder builder(op);
  Location loc = op->getLoc();
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    RankedTensorType type = narrowed(operand.getType(), element);
    operands.push_back(type ? truncateOnce(operand, type, truncated)
                            : operand);
  }
  SmallVector<Type> resultTypes;
  for (Type type : op->getResultTypes()) {
    RankedTensorType result = narrowed(type, element);
    resultTypes.push_back(result ? Type(result) : type);
  }
  OperationState state(loc, op->getName(), operands, resultTypes,
                       op->getAttrs());
  Operation *narrow = builder.create(state);
  for (auto [old, result] :
       llvm::zip_equal(op->getResults(), narrow->getResults())) {
    Value widened = result;
    if (result.getType() != old.getType())
      widened = arith::ExtFOp::create(builder, loc, old.getType(), result);
    old.replaceAllUsesWith(widened);
  }
  op->erase();
}

/// `value` rounded to `element` and widened back to f32, once per value.
static Value roundOnce(Value value, Type element,
                       DenseMap<Value, Value> &truncated,
                       DenseMap<Value, Value> &rounded) {
  Value &widened = rounded[value];
  if (!widened) {
    Value narrow =
        truncateOnce(value, narrowed(value.getType(), element), truncated);
    OpBuilder builder(value.getContext());
    builder.setInsertionPointAfterValue(narrow);
    widened = arith::ExtFOp::create(builder, value.getLoc(), value.getType(),
                                    narrow);
  }
  return widened;
}

/// `matmul` on its operands rounded to `element`, summing in f32 as
/// eager's lower-precision matmul does (products of bf16 values are exact
/// in f32), and its result rounded to `element` (what the eager op
/// returns), widened back for the ops after it. The matmul itself stays
/// f32: no narrow vectors reach the loops between the layers.
static void roundTensorMatmul(linalg::LinalgOp matmul, Type element,
                              DenseMap<Value, Value> &truncated,
                              DenseMap<Value, Value> &rounded) {
  for (OpOperand *input : matmul.getDpsInputOperands())
    input->set(roundOnce(input->get(), element, truncated, rounded));
  Value result = matmul->getResult(0);
  OpBuilder builder(matmul);
  builder.setInsertionPointAfter(matmul);
  Location loc = matmul.getLoc();
  Value narrow = arith::TruncFOp::create(
      builder, loc, narrowed(result.getType(), element), result);
  Value widened = arith::ExtFOp::create(builder, loc, result.getType(),
                                        narrow);
  result.replaceAllUsesExcept(widened, narrow.getDefiningOp());
}

/// truncf(extf(x)) back to the type x had: x.
static void foldRoundTrips(Operation *root) {
  root->walk([](arith::TruncFOp trunc) {
    auto extend = trunc.getIn().getDefiningOp<arith::ExtFOp>();
    if (!extend || extend.getIn().getType() != trunc.getType())
      return;
    trunc.replaceAllUsesWith(extend.getIn());
    trunc->erase();
    if (extend->use_empty())
      extend->erase();
  });
}

namespace {
struct LaminaAutocastPass
    : mlir::lamina::impl::LaminaAutocastBase<LaminaAutocastPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    Type target;
    if (element == "bf16")
      target = BFloat16Type::get(context);
    else if (element == "f16")
      target = Float16Type::get(context);
    else {
      getOperation()->emitError("lamina-autocast: element must be bf16 or "
                                "f16, not '")
          << element << "'";
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation()->walk([&](Operation *op) {
      if (isLowerPrecisionOp(op) && isAllF32(op))
        ops.push_back(op);
      else if (isTensorMatmul(op))
        matmuls.push_back(cast<linalg::LinalgOp>(op));
    });
    DenseMap<Value, Value> truncated, rounded;
    for (Operation *op : ops)
      castOp(op, target, truncated);
    for (linalg::LinalgOp matmul : matmuls)
      roundTensorMatmul(matmul, target, truncated, rounded);
    foldRoundTrips(getOperation());
  }
};
} // namespace
