//===- LayoutAnalysis.cpp - Layout inference and checking -----------------===//

#include "lamina/Lamina/Transforms/LayoutAnalysis.h"
#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
/// Propagates layouts through one function, reporting the first error.
class LayoutChecker {
public:
  explicit LayoutChecker(MLIRContext *context) : context(context) {}

  LogicalResult run(func::FuncOp function);
  DenseMap<Value, LayoutAttr> takeLayouts() { return std::move(layouts); }

private:
  LayoutAttr replicated() {
    return LayoutAttr::get(context, LayoutKind::replicated, std::nullopt);
  }
  LayoutAttr partial() {
    return LayoutAttr::get(context, LayoutKind::partial, std::nullopt);
  }
  LayoutAttr sharded(int64_t axis) {
    return LayoutAttr::get(context, LayoutKind::sharded, axis);
  }
  LayoutAttr get(Value value) {
    LayoutAttr layout = layouts.lookup(value);
    return layout ? layout : replicated();
  }
  static bool isPartial(LayoutAttr l) {
    return l.getKind() == LayoutKind::partial;
  }
  static bool isShardedOn(LayoutAttr l, int64_t axis) {
    return l.getKind() == LayoutKind::sharded && l.getAxis() == axis;
  }

  FailureOr<LayoutAttr> matmulLayout(Operation *op, StringRef path,
                                     LayoutAttr x, Value input, Value weight);
  FailureOr<LayoutAttr> applySync(Operation *op, StringRef path, SyncAttr sync,
                                  LayoutAttr in);
  LogicalResult checkBias(Operation *op, StringRef path, LayoutAttr in,
                          Value bias, int64_t rank);
  LogicalResult checkNotPartial(Operation *op, StringRef what, LayoutAttr in,
                                StringRef path);
  LogicalResult checkDropout(Operation *op, DropoutAttr dropout, LayoutAttr in);
  LogicalResult visit(Operation *op);

  MLIRContext *context;
  DenseMap<Value, LayoutAttr> layouts;
};
} // namespace

static std::string describe(StringRef path) {
  return path.empty() ? std::string("the value") : "layer '" + path.str() + "'";
}

FailureOr<LayoutAttr> LayoutChecker::matmulLayout(Operation *op,
                                                  StringRef path,
                                                  LayoutAttr x, Value input,
                                                  Value weight) {
  LayoutAttr w = get(weight);
  int64_t last = cast<RankedTensorType>(input.getType()).getRank() - 1;
  if (w.getKind() == LayoutKind::replicated) {
    if (isShardedOn(x, last)) {
      op->emitOpError("contracts an input sharded on its last axis with a "
                      "replicated weight; shard the weight on axis 1 (row "
                      "parallel) or all_gather the input (fwd_pre)");
      return failure();
    }
    return x; // R, S(batch) or P pass through a linear map
  }
  if (isShardedOn(w, 0)) {
    if (x.getKind() != LayoutKind::replicated) {
      op->emitOpError("is column parallel (weight S(0)) and needs a "
                      "replicated input, but its input has layout ")
          << x;
      return failure();
    }
    return sharded(last);
  }
  if (isShardedOn(w, 1)) {
    if (!isShardedOn(x, last)) {
      op->emitOpError("is row parallel (weight S(1)) and needs its input "
                      "sharded on the last axis (a column-parallel layer "
                      "before it, or a fwd_post scatter), but the input has "
                      "layout ")
          << x;
      return failure();
    }
    return partial();
  }
  op->emitOpError("has a weight with unsupported layout ") << w;
  return failure();
}

FailureOr<LayoutAttr> LayoutChecker::applySync(Operation *op, StringRef path,
                                               SyncAttr sync, LayoutAttr in) {
  if (sync.getMode() == SyncMode::bwd_post)
    return in; // the identity in the forward pass
  std::optional<int64_t> axis = sync.getAxis();
  auto wrong = [&](StringRef needs) {
    op->emitOpError("sync ")
        << sync << " on " << describe(path) << " needs " << needs
        << ", but its input has layout " << in;
    return failure();
  };
  switch (sync.getCollective()) {
  case CollectiveKind::all_reduce:
    if (!isPartial(in))
      return wrong("partial sums (P)");
    return replicated();
  case CollectiveKind::reduce_scatter:
    if (!isPartial(in))
      return wrong("partial sums (P)");
    return sharded(*axis);
  case CollectiveKind::all_gather:
    if (!isShardedOn(in, *axis))
      return wrong(("a value sharded on axis " + Twine(*axis)).str());
    return replicated();
  case CollectiveKind::scatter:
    if (in.getKind() != LayoutKind::replicated)
      return wrong("a replicated value (R)");
    return sharded(*axis);
  }
  llvm_unreachable("unknown collective");
}

LogicalResult LayoutChecker::checkNotPartial(Operation *op, StringRef what,
                                             LayoutAttr in, StringRef path) {
  if (!isPartial(in))
    return success();
  return op->emitOpError() << what << " partial sums (layout P) of "
                           << describe(path)
                           << "; add a fwd_post all_reduce (or "
                              "reduce_scatter) sync before it";
}

LogicalResult LayoutChecker::checkBias(Operation *op, StringRef path,
                                       LayoutAttr in, Value bias,
                                       int64_t rank) {
  if (isPartial(in))
    return op->emitOpError("adds its bias to partial sums (layout P) of ")
           << describe(path)
           << ": every rank would add it once more (Slapo's double-bias "
              "bug); add a fwd_post all_reduce sync between the matmul and "
              "the bias";
  LayoutAttr b = get(bias);
  bool featuresSharded = isShardedOn(in, rank - 1);
  if (featuresSharded && !isShardedOn(b, 0))
    return op->emitOpError("produces output features sharded over ranks "
                           "(column parallel), so its bias must be sharded on "
                           "axis 0 too, but the bias has layout ")
           << b;
  if (!featuresSharded && b.getKind() != LayoutKind::replicated)
    return op->emitOpError("adds a bias with layout ")
           << b << " to whole output features; the bias must be replicated";
  return success();
}

LogicalResult LayoutChecker::checkDropout(Operation *op, DropoutAttr dropout,
                                          LayoutAttr in) {
  if (dropout && dropout.getForkRng() &&
      in.getKind() == LayoutKind::replicated)
    return op->emitOpError(
        "uses fork_rng on a replicated value: every rank would drop a "
        "different mask of the same value; fork_rng is for sharded values");
  return success();
}

LogicalResult LayoutChecker::visit(Operation *op) {
  if (std::optional<LinearLayerParts> parts = getLinearLayerParts(op)) {
    StringRef path = parts->path.getValue();
    bool onInput = parts->sync && parts->sync.getMode() == SyncMode::fwd_pre;
    LayoutAttr input = get(parts->input);
    if (onInput) {
      FailureOr<LayoutAttr> gathered = applySync(op, path, parts->sync, input);
      if (failed(gathered))
        return failure();
      input = *gathered;
    }
    FailureOr<LayoutAttr> layout =
        matmulLayout(op, path, input, parts->input, parts->weight);
    if (failed(layout))
      return failure();
    if (parts->sync && !onInput &&
        failed(layout = applySync(op, path, parts->sync, *layout)))
      return failure();
    int64_t rank =
        cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    if (parts->bias && failed(checkBias(op, path, *layout, parts->bias, rank)))
      return failure();
    if (parts->activation &&
        failed(checkNotPartial(op, "applies its activation to", *layout, path)))
      return failure();
    if (parts->dropout &&
        (failed(checkNotPartial(op, "applies dropout to", *layout, path)) ||
         failed(checkDropout(op, parts->dropout, *layout))))
      return failure();
    layouts[op->getResult(0)] = *layout;
    return success();
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    FailureOr<LayoutAttr> layout = matmulLayout(
        op, matmul.getPath().value_or(""), get(matmul.getInput()),
        matmul.getInput(), matmul.getWeight());
    if (failed(layout))
      return failure();
    layouts[matmul.getResult()] = *layout;
    return success();
  }
  if (auto sync = dyn_cast<SyncOp>(op)) {
    FailureOr<LayoutAttr> layout = applySync(op, sync.getPath().value_or(""),
                                             sync.getSpec(),
                                             get(sync.getInput()));
    if (failed(layout))
      return failure();
    layouts[sync.getResult()] = *layout;
    return success();
  }
  if (auto biasAdd = dyn_cast<BiasAddOp>(op)) {
    LayoutAttr in = get(biasAdd.getInput());
    if (failed(checkBias(op, biasAdd.getPath().value_or(""), in,
                         biasAdd.getBias(), biasAdd.getType().getRank())))
      return failure();
    layouts[biasAdd.getResult()] = in;
    return success();
  }
  if (auto activation = dyn_cast<ActivationOp>(op)) {
    LayoutAttr in = get(activation.getInput());
    if (failed(checkNotPartial(op, "applies an activation to", in,
                               activation.getPath().value_or(""))))
      return failure();
    layouts[activation.getResult()] = in;
    return success();
  }
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    LayoutAttr in = get(dropout.getInput());
    if (failed(checkNotPartial(op, "applies dropout to", in,
                               dropout.getPath().value_or(""))) ||
        failed(checkDropout(op, dropout.getConfig(), in)))
      return failure();
    layouts[dropout.getResult()] = in;
    return success();
  }
  if (auto qkv = dyn_cast<FusedQKVOp>(op)) {
    LayoutAttr x = get(qkv.getInput()), w = get(qkv.getWeight());
    if (x.getKind() != LayoutKind::replicated)
      return op->emitOpError("needs a replicated input, got ") << x;
    int64_t headsAxis = cast<RankedTensorType>(qkv.getQ().getType()).getRank() - 2;
    LayoutAttr out = replicated();
    if (isShardedOn(w, 0)) {
      if (!isShardedOn(get(qkv.getBias()), 0))
        return op->emitOpError("has its weight sharded by heads (S(0)) but "
                               "not its bias");
      out = sharded(headsAxis);
    } else if (w.getKind() != LayoutKind::replicated) {
      return op->emitOpError("shards its weight by heads on axis 0 only, "
                             "got ")
             << w;
    }
    for (Value result : qkv->getResults())
      layouts[result] = out;
    return success();
  }
  // Reshapes keep a sharding whose axis leads its group: contiguous rank
  // blocks of the outer dim stay contiguous blocks (merging heads).
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    LayoutAttr in = get(collapse.getSrc());
    LayoutAttr out = in;
    if (in.getKind() == LayoutKind::sharded) {
      out = LayoutAttr();
      for (auto [group, dims] :
           llvm::enumerate(collapse.getReassociationIndices()))
        if (dims.front() == *in.getAxis())
          out = sharded(group);
      if (!out)
        return op->emitOpError("merges the sharded axis ")
               << *in.getAxis()
               << " into an outer dimension; all_gather the value first";
    }
    if (failed(checkNotPartial(op, "reshapes", in, "")))
      return failure();
    layouts[collapse.getResult()] = out;
    return success();
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    LayoutAttr in = get(expand.getSrc());
    LayoutAttr out = in;
    if (in.getKind() == LayoutKind::sharded)
      out = sharded(expand.getReassociationIndices()[*in.getAxis()].front());
    if (failed(checkNotPartial(op, "reshapes", in, "")))
      return failure();
    layouts[expand.getResult()] = out;
    return success();
  }
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (auto [index, value] : llvm::enumerate(ret.getOperands()))
      if (isPartial(get(value)))
        return op->emitOpError("returns partial sums (layout P) as result ")
               << index << "; add a fwd_post all_reduce sync before returning";
    return success();
  }
  // Any other op: nothing partial may reach it; sharded operands must agree
  // and only pass through ops that keep shapes (element-wise ops).
  LayoutAttr common = replicated();
  bool first = true;
  for (Value operand : op->getOperands()) {
    LayoutAttr layout = get(operand);
    if (isPartial(layout))
      return op->emitOpError("receives partial sums (layout P); only a sync "
                             "or another linear layer's reduction may take "
                             "them: add a fwd_post all_reduce before it");
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    if (!first && layout != common)
      return op->emitOpError("mixes operands with layouts ")
             << common << " and " << layout;
    common = layout;
    first = false;
  }
  if (common.getKind() == LayoutKind::sharded) {
    bool sameShapes = llvm::all_of(op->getResultTypes(), [&](Type type) {
      return op->getNumOperands() &&
             type == op->getOperand(0).getType();
    });
    if (!sameShapes || op->getNumRegions() != 0)
      return op->emitOpError("takes sharded operands (")
             << common
             << "); layouts propagate only through element-wise ops: "
                "all_gather the value first";
  }
  for (Value result : op->getResults())
    layouts[result] = common;
  return success();
}

LogicalResult LayoutChecker::run(func::FuncOp function) {
  for (BlockArgument argument : function.getArguments())
    if (LayoutAttr layout = getDeclaredLayout(argument))
      layouts[argument] = layout;
  WalkResult result = function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == function.getOperation())
      return WalkResult::advance();
    if (failed(visit(op)))
      return WalkResult::interrupt();
    // Regions of other ops (linalg bodies) are checked as a whole above.
    return op->getNumRegions() ? WalkResult::skip() : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

FailureOr<DenseMap<Value, LayoutAttr>>
mlir::lamina::inferLayouts(func::FuncOp function) {
  LayoutChecker checker(function.getContext());
  if (failed(checker.run(function)))
    return failure();
  return checker.takeLayouts();
}
