//===- SplitPipelineStages.cpp - Functions into pipeline stages -----------===//

#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINASPLITPIPELINESTAGES
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// Splits `function` after each marked layer; returns whether it did.
static LogicalResult splitFunction(func::FuncOp function) {
  Block &body = function.getBody().front();
  // Stages: runs of ops ending at a cut; the last one ends at the return.
  SmallVector<SmallVector<Operation *>> stages(1);
  for (Operation &op : body.without_terminator()) {
    stages.back().push_back(&op);
    if (op.hasAttr(LaminaDialect::kPipelineCutAttrName))
      stages.emplace_back();
  }
  if (stages.size() == 1)
    return success();
  Operation *terminator = body.getTerminator();

  auto stageOf = [&](Operation *op) -> int64_t {
    for (auto [index, ops] : llvm::enumerate(stages))
      if (llvm::is_contained(ops, op))
        return index;
    return stages.size(); // the terminator
  };
  // Values each stage receives: the function arguments it uses (each stage
  // takes its own from the caller: the weights of a stage never travel
  // through other stages) and results of earlier stages; values each stage
  // sends: those any later stage uses, including the ones it only passes
  // through, so that stages talk to their neighbours only. A value the
  // return uses is a result of the stage computing it: the caller takes it
  // from there (a backward's gradients stay on their stage's rank).
  size_t count = stages.size();
  SmallVector<llvm::SetVector<Value>> inputs(count), outputs(count);
  auto definingStage = [&](Value value) -> int64_t {
    if (auto *op = value.getDefiningOp())
      return stageOf(op);
    return -1; // a function argument
  };
  auto use = [&](Value value, int64_t user) {
    int64_t definer = definingStage(value);
    if (user == static_cast<int64_t>(count)) { // the return
      if (definer >= 0)
        outputs[definer].insert(value);
      return;
    }
    if (definer < 0) {
      if (user < static_cast<int64_t>(count))
        inputs[user].insert(value);
      return;
    }
    for (int64_t stage = definer + 1; stage < user; ++stage) {
      inputs[stage].insert(value);
      outputs[stage].insert(value);
    }
    if (definer >= 0 && definer < user)
      outputs[definer].insert(value);
    if (user < static_cast<int64_t>(count) && definer < user)
      inputs[user].insert(value);
  };
  for (size_t index = 0; index < count; ++index)
    for (Operation *op : stages[index])
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (operand.getParentBlock() == &body)
            use(operand, index);
      });
  for (Value operand : terminator->getOperands())
    use(operand, count);

  // One function per stage, placed before @f.
  OpBuilder builder(function);
  SmallVector<func::FuncOp> stageFunctions;
  for (size_t index = 0; index < count; ++index) {
    SmallVector<Type> argumentTypes, resultTypes;
    for (Value value : inputs[index])
      argumentTypes.push_back(value.getType());
    for (Value value : outputs[index])
      resultTypes.push_back(value.getType());
    auto stage = func::FuncOp::create(
        builder, function.getLoc(),
        (function.getSymName() + "_stage" + Twine(index)).str(),
        builder.getFunctionType(argumentTypes, resultTypes));
    bool reversed = function->hasAttr(LaminaDialect::kPipelineReversedAttrName);
    setPipelineStage(stage, reversed ? count - 1 - index : index);
    Block *stageBody = stage.addEntryBlock();
    IRMapping mapping;
    mapping.map(inputs[index].getArrayRef(), stageBody->getArguments());
    OpBuilder inner = OpBuilder::atBlockEnd(stageBody);
    for (Operation *op : stages[index])
      inner.clone(*op, mapping);
    SmallVector<Value> returned;
    for (Value value : outputs[index])
      returned.push_back(mapping.lookup(value));
    func::ReturnOp::create(inner, function.getLoc(), returned);
    stageFunctions.push_back(stage);
  }

  // @f calls the stages in order.
  IRMapping values;
  OpBuilder calls(terminator);
  for (auto [index, stage] : llvm::enumerate(stageFunctions)) {
    SmallVector<Value> arguments;
    for (Value value : inputs[index])
      arguments.push_back(values.lookupOrDefault(value));
    auto call = func::CallOp::create(calls, function.getLoc(), stage,
                                     arguments);
    values.map(outputs[index].getArrayRef(), call.getResults());
  }
  for (OpOperand &operand : terminator->getOpOperands())
    operand.set(values.lookupOrDefault(operand.get()));
  for (auto &ops : llvm::reverse(stages))
    for (Operation *op : llvm::reverse(ops))
      op->erase();
  return success();
}

namespace {
struct LaminaSplitPipelineStagesPass
    : mlir::lamina::impl::LaminaSplitPipelineStagesBase<
          LaminaSplitPipelineStagesPass> {
  void runOnOperation() override {
    for (auto function :
         llvm::to_vector(getOperation().getOps<func::FuncOp>()))
      if (!function.isDeclaration() && failed(splitFunction(function)))
        return signalPassFailure();
  }
};
} // namespace
