//===- LayoutAnalysis.cpp - Layout inference and checking -----------------===//
//
// Walks a function in order and gives every value the layout its op's
// LayoutOpInterface model assigns (ops without one are element-wise); the
// first rule that rejects its operands becomes an error on the op.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

namespace {
/// Propagates layouts through one function, reporting the first error.
class LayoutChecker : public LayoutState {
public:
  explicit LayoutChecker(MLIRContext *context) : context(context) {}

  LogicalResult run(func::FuncOp function);
  DenseMap<Value, LayoutAttr> takeLayouts() { return std::move(layouts); }

  LayoutAttr getLayout(Value value) override {
    LayoutAttr layout = layouts.lookup(value);
    return layout ? layout : replicated(context);
  }

private:
  LogicalResult visit(Operation *op);

  MLIRContext *context;
  DenseMap<Value, LayoutAttr> layouts;
};
} // namespace

LogicalResult LayoutChecker::visit(Operation *op) {
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (auto [index, value] : llvm::enumerate(ret.getOperands()))
      if (Check problem = checkResult(getLayout(value), index))
        return op->emitOpError(*problem);
    return success();
  }
  auto rules = dyn_cast<LayoutOpInterface>(op);
  LayoutOrError rule =
      rules ? rules.inferResultLayout(*this) : otherOpLayout(op, *this);
  if (rule.failed())
    return op->emitOpError(rule.getReason());
  for (Value result : op->getResults())
    layouts[result] = rule.get();
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

FailureOr<FunctionLayouts> mlir::lamina::inferLayouts(ModuleOp module) {
  FunctionLayouts result;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isDeclaration())
      continue;
    FailureOr<DenseMap<Value, LayoutAttr>> layouts = inferLayouts(function);
    if (failed(layouts))
      return failure();
    result.emplace_back(function, std::move(*layouts));
  }
  return result;
}
