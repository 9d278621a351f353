//===- GradientLayouts.cpp - Layouts of the backward pass -----------------===//
//
// Walks a function in reverse and asks each op's LayoutOpInterface model
// for the gradient layouts of its operands; ops without one are
// element-wise. A call walks the function it calls in reverse, from the
// gradients of its results.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/GradientLayouts.h"
#include "lamina/Lamina/Analysis/GradientRules.h"
#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

namespace {
class GradientChecker : public GradientLayoutState {
public:
  GradientChecker(func::FuncOp function,
                  const DenseMap<Value, LayoutAttr> &forward,
                  ArrayRef<int64_t> constants, StringRef axis)
      : function(function), forward(forward),
        context(function.getContext()), axis(axis),
        constants(constants.begin(), constants.end()) {}

  /// Walks a program: its results' gradients are laid out as its results.
  LogicalResult run();
  /// Walks the function from the gradients of its results (a call's).
  LogicalResult runFrom(ArrayRef<GradientLayout> resultGradients);
  SmallVector<DerivedSync> derivedSyncs;

  DenseMap<Value, LayoutAttr> takeLayouts() {
    DenseMap<Value, LayoutAttr> result;
    for (auto &[value, gradient] : gradients)
      result[value] = gradient.layout;
    return result;
  }

  StringRef getGridAxis() override { return axis; }
  LayoutAttr getForwardLayout(Value value) override {
    LayoutAttr layout = forward.lookup(value);
    return layout ? layout : replicated(context);
  }
  GradientLayout getGradient(Value result) override {
    return gradients.lookup(result);
  }
  LogicalResult addGradient(Operation *at, Value value,
                            GradientLayout gradient) override;
  void deriveSync(Operation *op, SyncAttr resolved) override {
    derivedSyncs.push_back({op, resolved});
  }
  LogicalResult addElementwiseGradients(Operation *op) override;

private:
  LogicalResult visit(Operation *op);
  LogicalResult visitCall(func::CallOp call, func::FuncOp callee);
  /// Finds the parameters and the values that get gradients.
  void markActive();
  /// Visits the body's ops in reverse.
  LogicalResult walkBackward();
  /// What sums the partial gradients from layer `origin` on this axis.
  std::string describeFix(StringRef origin) {
    if (syncsActOn(axis))
      return "add sync(\"bwd_post\", \"all_reduce\") on the input of " +
             describeLayer(origin);
    return "only the gradients of layer parameters are summed over grid "
           "axis '" + axis.str() + "'";
  }

  func::FuncOp function;
  const DenseMap<Value, LayoutAttr> &forward;
  MLIRContext *context;
  StringRef axis;
  DenseMap<Value, GradientLayout> gradients;
  /// Arguments that are layer parameters (weights, biases).
  llvm::SmallPtrSet<Value, 8> parameters;
  /// Arguments that get no gradient.
  llvm::SmallDenseSet<int64_t> constants;
  /// Values computed from an argument that gets a gradient.
  llvm::DenseSet<Value> active;
};
} // namespace

LogicalResult GradientChecker::addGradient(Operation *at, Value value,
                                           GradientLayout gradient) {
  // A value no gradient is asked of (computed from constants only, or a
  // constant argument) takes none: the backward computes nothing there.
  if (!gradient.layout || !active.contains(value))
    return success();
  auto [it, inserted] = gradients.try_emplace(value, gradient);
  if (inserted || it->second.layout == gradient.layout)
    return success();
  // Two contributions of different layouts cannot be summed as they are.
  const GradientLayout &first = it->second;
  const GradientLayout *partialOne = isPartial(first.layout) ? &first
                                     : isPartial(gradient.layout)
                                         ? &gradient
                                         : nullptr;
  InFlightDiagnostic diag =
      at->emitOpError("the gradient of its operand sums ")
      << first.layout << " and " << gradient.layout << " contributions";
  if (partialOne)
    diag << ": the partial sums come from " << describeLayer(partialOne->origin)
         << "; " << describeFix(partialOne->origin);
  return diag;
}

LogicalResult GradientChecker::visit(Operation *op) {
  if (llvm::none_of(op->getResults(), [&](Value result) {
        return gradients.count(result);
      }))
    return success();
  if (auto call = dyn_cast<func::CallOp>(op))
    if (func::FuncOp callee = getDefinedCallee(call))
      return visitCall(call, callee);
  if (auto rules = dyn_cast<LayoutOpInterface>(op))
    return rules.inferOperandGradientLayouts(*this);
  return addElementwiseGradients(op);
}

/// Element-wise ops (the only ones without a model the forward rules let
/// sharded values through): every float tensor operand of the result's
/// shape gets the result's gradient, whole for a replicated operand.
LogicalResult GradientChecker::addElementwiseGradients(Operation *op) {
  GradientLayout dy = gradients.lookup(op->getResult(0));
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      continue;
    if (type != op->getResult(0).getType()) {
      // Whole values (a reduction, a broadcast, a loss of whole logits):
      // every rank pulls the cotangent back through the same Jacobian, so
      // the operand's gradient is whole where the result's is, and partial
      // sums (of the same origin) where the result's are.
      if ((isReplicated(dy.layout) || isPartial(dy.layout)) &&
          isReplicated(getForwardLayout(op->getResult(0))) &&
          isReplicated(getForwardLayout(operand))) {
        if (failed(addGradient(op, operand, dy)))
          return failure();
        continue;
      }
      return op->emitOpError("has no backward layout rule for its "
                             "sharded gradient ")
             << dy.layout;
    }
    // A replicated operand joining sharded ones gave each rank its block;
    // the transpose gathers the blocks of its gradient back whole.
    GradientLayout dx = dy;
    if (isReplicated(getForwardLayout(operand)) &&
        isSharded(dy.layout) && isSharded(getForwardLayout(op->getResult(0))))
      dx.layout = replicated(context);
    if (failed(addGradient(op, operand, dx)))
      return failure();
  }
  return success();
}

/// Every instance of a called function walks it with its own gradients;
/// they must transpose its syncs alike (the function is partitioned once).
LogicalResult GradientChecker::visitCall(func::CallOp call,
                                         func::FuncOp callee) {
  SmallVector<int64_t> inactive;
  for (auto [index, operand] : llvm::enumerate(call.getOperands()))
    if (!active.contains(operand))
      inactive.push_back(index);
  GradientChecker inner(callee, forward, inactive, axis);
  SmallVector<GradientLayout> resultGradients = llvm::map_to_vector(
      call.getResults(), [&](Value result) { return getGradient(result); });
  if (failed(inner.runFrom(resultGradients)))
    return failure();
  for (const DerivedSync &sync : inner.derivedSyncs) {
    auto earlier = llvm::find_if(derivedSyncs, [&](const DerivedSync &other) {
      return other.op == sync.op;
    });
    if (earlier == derivedSyncs.end()) {
      derivedSyncs.push_back(sync);
      continue;
    }
    if (earlier->resolved != sync.resolved) {
      InFlightDiagnostic diag =
          call.emitOpError("needs a sync of @")
          << callee.getSymName() << " to transpose as " << sync.resolved
          << ", but another call needs " << earlier->resolved
          << "; a called function is partitioned once: write the sync's "
             "tensor_parallel_output_grad";
      diag.attachNote(sync.op->getLoc()) << "the sync";
      return diag;
    }
  }
  for (auto [operand, argument] :
       llvm::zip_equal(call.getOperands(), callee.getArguments())) {
    auto it = inner.gradients.find(argument);
    if (it != inner.gradients.end() &&
        failed(addGradient(call, operand, it->second)))
      return failure();
  }
  return success();
}

void GradientChecker::markActive() {
  Block &body = function.getBody().front();
  parameters = getLayerParameters(function);
  for (BlockArgument argument : body.getArguments())
    if (!constants.contains(argument.getArgNumber()))
      active.insert(argument);
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value operand) { return active.contains(operand); }))
      active.insert(op.result_begin(), op.result_end());
}

LogicalResult GradientChecker::walkBackward() {
  for (Operation &op : llvm::reverse(function.getBody().front()
                                         .without_terminator()))
    if (failed(visit(&op)))
      return failure();
  return success();
}

LogicalResult
GradientChecker::runFrom(ArrayRef<GradientLayout> resultGradients) {
  markActive();
  Operation *terminator = function.getBody().front().getTerminator();
  for (auto [result, gradient] :
       llvm::zip_equal(terminator->getOperands(), resultGradients))
    if (isa<RankedTensorType>(result.getType()) &&
        failed(addGradient(terminator, result, gradient)))
      return failure();
  // Partial gradients of a called function's arguments go back to the
  // caller, which sums them or reports them.
  return walkBackward();
}

LogicalResult GradientChecker::run() {
  NameGridAxisInErrors naming(function, axis);
  Block &body = function.getBody().front();
  SmallVector<GradientLayout> resultGradients = llvm::map_to_vector(
      body.getTerminator()->getOperands(), [&](Value result) {
        return GradientLayout{getForwardLayout(result), ""};
      });
  if (failed(runFrom(resultGradients)))
    return failure();
  // A program input's gradient must be whole or blocks; a parameter's may be
  // partial (it is all-reduced with the other parameter gradients).
  for (BlockArgument argument : body.getArguments()) {
    auto it = gradients.find(argument);
    if (it == gradients.end() || !isPartial(it->second.layout) ||
        parameters.contains(argument) ||
        constants.contains(argument.getArgNumber()))
      continue;
    return function.emitOpError("the gradient of argument ")
           << argument.getArgNumber()
           << " would be partial sums (layout P) on each rank, coming from "
           << describeLayer(it->second.origin) << "; "
           << describeFix(it->second.origin);
  }
  return success();
}

/// Adds to `parameters` the arguments of `function` that its layers (and
/// the functions it calls, not yet in `visiting`) take as parameters.
static void addLayerParameters(func::FuncOp function,
                               llvm::SmallPtrSetImpl<Value> &parameters,
                               llvm::SmallPtrSetImpl<Operation *> &visiting) {
  auto add = [&](Value value) {
    if (value && isa<BlockArgument>(value))
      parameters.insert(value);
  };
  visiting.insert(function);
  function.walk([&](Operation *op) {
    if (auto layer = dyn_cast<LayerOpInterface>(op)) {
      for (StringRef name : {"weight", "bias"})
        add(layer.getLayerOperand(name));
    } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
      add(matmul.getWeight()); // a decomposed layer's pieces
    } else if (auto biasAdd = dyn_cast<BiasAddOp>(op)) {
      add(biasAdd.getBias());
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      func::FuncOp callee = getDefinedCallee(call);
      if (!callee || visiting.contains(callee))
        return;
      llvm::SmallPtrSet<Value, 8> inner;
      addLayerParameters(callee, inner, visiting);
      for (auto [operand, argument] :
           llvm::zip_equal(call.getOperands(), callee.getArguments()))
        if (inner.contains(argument))
          add(operand);
    }
  });
  visiting.erase(function);
}

llvm::SmallPtrSet<Value, 8>
mlir::lamina::getLayerParameters(func::FuncOp function) {
  llvm::SmallPtrSet<Value, 8> parameters;
  llvm::SmallPtrSet<Operation *, 4> visiting;
  addLayerParameters(function, parameters, visiting);
  return parameters;
}

FailureOr<DenseMap<Value, LayoutAttr>>
mlir::lamina::inferGradientLayouts(func::FuncOp function,
                                   const DenseMap<Value, LayoutAttr> &layouts,
                                   SmallVectorImpl<DerivedSync> *derived,
                                   ArrayRef<int64_t> constants,
                                   StringRef axis) {
  GradientChecker checker(function, layouts, constants, axis);
  if (failed(checker.run()))
    return failure();
  if (derived)
    llvm::append_range(*derived, checker.derivedSyncs);
  return checker.takeLayouts();
}

void mlir::lamina::applyDerivedSyncs(ArrayRef<DerivedSync> derived) {
  for (const DerivedSync &sync : derived) {
    if (auto syncOp = dyn_cast<SyncOp>(sync.op))
      syncOp.setSpecAttr(sync.resolved);
    else
      cast<LinearLayerOpInterface>(sync.op).setLayerSync(sync.resolved);
  }
}
