//===- LayoutAnalysis.cpp - Layout inference and checking -----------------===//
//
// Walks a function in order and gives every value the layout on one grid
// axis that its op's LayoutOpInterface model assigns (ops without one are
// element-wise); the first rule that rejects its operands becomes an error
// on the op.
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
  LayoutChecker(MLIRContext *context, StringRef axis)
      : context(context), axis(axis) {}

  LogicalResult run(func::FuncOp function);
  DenseMap<Value, LayoutAttr> takeLayouts() { return std::move(layouts); }

  LayoutAttr getLayout(Value value) override {
    LayoutAttr layout = layouts.lookup(value);
    return layout ? layout : replicated(context);
  }
  StringRef getGridAxis() override { return axis; }

private:
  LogicalResult visit(Operation *op);

  MLIRContext *context;
  StringRef axis;
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
  NameGridAxisInErrors naming(function, axis);
  for (BlockArgument argument : function.getArguments())
    if (LayoutAttr layout = getDeclaredLayout(argument, axis))
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

/// Rejects an op of `function` whose result the axes' rules shard on the
/// same dim: each rule assumed the dim whole on the other axes.
static LogicalResult checkOneAxisPerDim(func::FuncOp function,
                                        const GridLayouts &layouts) {
  LayoutsPerAxis perAxis = getFunctionLayoutsPerAxis(layouts, function);
  WalkResult result = function.walk([&](Operation *op) {
    for (Value value : op->getResults()) {
      DenseMap<int64_t, StringAttr> shardedOn;
      for (auto &[axis, onAxis] : perAxis) {
        LayoutAttr layout = onAxis->lookup(value);
        if (!layout || !layout.getAxis())
          continue;
        auto [it, inserted] = shardedOn.try_emplace(*layout.getAxis(), axis);
        if (inserted)
          continue;
        op->emitOpError("would shard dim ")
            << *layout.getAxis() << " of its result on grid axes '"
            << it->second.getValue() << "' and '" << axis.getValue()
            << "' (its operands are sharded there on different axes); a dim "
               "is sharded on one axis at most";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LayoutsPerAxis
mlir::lamina::getFunctionLayoutsPerAxis(const GridLayouts &layouts,
                                        func::FuncOp function) {
  LayoutsPerAxis perAxis;
  for (auto &[axis, functions] : layouts)
    for (auto &[checked, onAxis] : functions)
      if (checked == function)
        perAxis.emplace_back(axis, &onAxis);
  return perAxis;
}

FailureOr<GridLayouts> mlir::lamina::inferGridLayouts(ModuleOp module) {
  SmallVector<GridAxis> grid = getGridAxes(module);
  if (grid.empty())
    grid.push_back(
        {StringAttr::get(module.getContext(), LaminaDialect::kTensorAxisName),
         1});
  GridLayouts layouts;
  for (const GridAxis &axis : grid) {
    FailureOr<FunctionLayouts> onAxis = inferLayouts(module, axis.name);
    if (failed(onAxis))
      return failure();
    layouts.emplace_back(axis.name, std::move(*onAxis));
  }
  if (grid.size() > 1)
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration() &&
          failed(checkOneAxisPerDim(function, layouts)))
        return failure();
  return layouts;
}

NameGridAxisInErrors::NameGridAxisInErrors(Operation *op, StringRef axis)
    : context(op->getContext()) {
  if (getGridAxes(op).size() < 2)
    return;
  std::string suffix = (" (on grid axis '" + axis + "')").str();
  handler = context->getDiagEngine().registerHandler(
      [suffix](Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
          diagnostic << suffix;
        return failure(); // passed on to the handlers that report it
      });
}

NameGridAxisInErrors::~NameGridAxisInErrors() {
  if (handler)
    context->getDiagEngine().eraseHandler(*handler);
}

FailureOr<DenseMap<Value, LayoutAttr>>
mlir::lamina::inferLayouts(func::FuncOp function, StringRef axis) {
  LayoutChecker checker(function.getContext(), axis);
  if (failed(checker.run(function)))
    return failure();
  return checker.takeLayouts();
}

FailureOr<FunctionLayouts> mlir::lamina::inferLayouts(ModuleOp module,
                                                      StringRef axis) {
  FunctionLayouts result;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isDeclaration())
      continue;
    FailureOr<DenseMap<Value, LayoutAttr>> layouts =
        inferLayouts(function, axis);
    if (failed(layouts))
      return failure();
    result.emplace_back(function, std::move(*layouts));
  }
  return result;
}
