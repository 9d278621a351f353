//===- LayoutAnalysis.cpp - Layout inference and checking -----------------===//
//
// Walks a function in order and gives every value the layout on one grid
// axis that its op's LayoutOpInterface model assigns (ops without one are
// element-wise); the first rule that rejects its operands becomes an error
// on the op. A call passes its operands' layouts into the function it calls,
// inferred once, and takes the layouts of what it returns.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

namespace {
/// A function the program calls, inferred once, for the layouts its first
/// call passes: it is partitioned once, so every call must pass the same.
struct CalleeLayouts {
  func::CallOp firstCall;
  SmallVector<LayoutAttr> arguments, results;
  DenseMap<Value, LayoutAttr> layouts;
  bool inferred = false;
};
/// The called functions of one inference, in the order first called.
using CalleeTable =
    llvm::MapVector<Operation *, std::unique_ptr<CalleeLayouts>>;

/// Propagates layouts through one function, reporting the first error.
class LayoutChecker : public LayoutState {
public:
  LayoutChecker(MLIRContext *context, StringRef axis, CalleeTable &callees)
      : context(context), axis(axis), callees(callees) {}

  /// Infers `function`'s layouts from those declared on its arguments.
  LogicalResult run(func::FuncOp function);
  /// Infers a called `function`'s layouts from those its arguments receive.
  LogicalResult runCallee(func::FuncOp function,
                          ArrayRef<LayoutAttr> arguments);
  DenseMap<Value, LayoutAttr> takeLayouts() { return std::move(layouts); }

  LayoutAttr getLayout(Value value) override {
    LayoutAttr layout = layouts.lookup(value);
    return layout ? layout : replicated(context);
  }
  StringRef getGridAxis() override { return axis; }

private:
  LogicalResult visit(Operation *op);
  LogicalResult visitCall(func::CallOp call, func::FuncOp callee);
  LogicalResult walkBody(func::FuncOp function);

  MLIRContext *context;
  StringRef axis;
  CalleeTable &callees;
  DenseMap<Value, LayoutAttr> layouts;
};
} // namespace

func::FuncOp mlir::lamina::getDefinedCallee(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  return callee && !callee.isDeclaration() ? callee : func::FuncOp();
}

LogicalResult LayoutChecker::visitCall(func::CallOp call,
                                       func::FuncOp callee) {
  SmallVector<LayoutAttr> passed = llvm::map_to_vector(
      call.getOperands(), [&](Value operand) { return getLayout(operand); });
  std::unique_ptr<CalleeLayouts> &slot = callees[callee];
  if (!slot) {
    slot = std::make_unique<CalleeLayouts>();
    slot->firstCall = call;
    slot->arguments = passed;
    CalleeLayouts *record = slot.get(); // the table grows in the callee
    for (auto [index, layout] : llvm::enumerate(passed))
      if (LayoutAttr declared =
              getDeclaredLayout(callee.getArgument(index), axis);
          declared && declared != layout)
        return call.emitOpError("passes argument ")
               << index << " with layout " << layout << " to @"
               << callee.getSymName() << ", which declares it " << declared;
    LayoutChecker inner(context, axis, callees);
    if (failed(inner.runCallee(callee, passed)))
      return failure();
    Operation *terminator = callee.getBody().back().getTerminator();
    record->results = llvm::map_to_vector(
        terminator->getOperands(),
        [&](Value value) { return inner.getLayout(value); });
    record->layouts = inner.takeLayouts();
    record->inferred = true;
  }
  CalleeLayouts &record = *callees[callee];
  if (!record.inferred)
    return call.emitOpError("calls @")
           << callee.getSymName()
           << " from inside itself; a called function's layouts are "
              "inferred once, without recursion";
  for (auto [index, layout] : llvm::enumerate(passed))
    if (layout != record.arguments[index]) {
      InFlightDiagnostic diag =
          call.emitOpError("passes argument ")
          << index << " with layout " << layout << " to @"
          << callee.getSymName() << ", which an earlier call passes with "
          << record.arguments[index]
          << "; a called function is partitioned once, for one layout of "
             "its arguments";
      diag.attachNote(record.firstCall.getLoc()) << "the earlier call";
      return diag;
    }
  for (auto [result, layout] :
       llvm::zip_equal(call.getResults(), record.results))
    layouts[result] = layout;
  return success();
}

LogicalResult LayoutChecker::visit(Operation *op) {
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (auto [index, value] : llvm::enumerate(ret.getOperands()))
      if (Check problem = checkResult(getLayout(value), index))
        return op->emitOpError(*problem);
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op))
    if (func::FuncOp callee = getDefinedCallee(call))
      return visitCall(call, callee);
  auto rules = dyn_cast<LayoutOpInterface>(op);
  LayoutOrError rule =
      rules ? rules.inferResultLayout(*this) : otherOpLayout(op, *this);
  if (rule.failed())
    return op->emitOpError(rule.getReason());
  for (Value result : op->getResults())
    layouts[result] = rule.get();
  return success();
}

LogicalResult LayoutChecker::walkBody(func::FuncOp function) {
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

LogicalResult LayoutChecker::run(func::FuncOp function) {
  NameGridAxisInErrors naming(function, axis);
  for (BlockArgument argument : function.getArguments())
    if (LayoutAttr layout = getDeclaredLayout(argument, axis))
      layouts[argument] = layout;
  return walkBody(function);
}

LogicalResult LayoutChecker::runCallee(func::FuncOp function,
                                       ArrayRef<LayoutAttr> arguments) {
  for (auto [argument, layout] :
       llvm::zip_equal(function.getArguments(), arguments))
    layouts[argument] = layout;
  return walkBody(function);
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

llvm::SmallPtrSet<Operation *, 8>
mlir::lamina::getCalledFunctions(ModuleOp module) {
  llvm::SmallPtrSet<Operation *, 8> called;
  module.walk([&](func::CallOp call) {
    if (func::FuncOp callee = getDefinedCallee(call))
      called.insert(callee);
  });
  return called;
}

FailureOr<DenseMap<Value, LayoutAttr>>
mlir::lamina::inferLayouts(func::FuncOp function, StringRef axis) {
  CalleeTable callees;
  LayoutChecker checker(function.getContext(), axis, callees);
  if (failed(checker.run(function)))
    return failure();
  DenseMap<Value, LayoutAttr> layouts = checker.takeLayouts();
  for (auto &record : llvm::make_second_range(callees))
    layouts.insert(record->layouts.begin(), record->layouts.end());
  return layouts;
}

FailureOr<FunctionLayouts> mlir::lamina::inferLayouts(ModuleOp module,
                                                      StringRef axis) {
  // Functions called take their layouts from their calls.
  llvm::SmallPtrSet<Operation *, 8> called = getCalledFunctions(module);
  CalleeTable callees;
  FunctionLayouts result;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isDeclaration() || called.contains(function))
      continue;
    LayoutChecker checker(function.getContext(), axis, callees);
    if (failed(checker.run(function)))
      return failure();
    result.emplace_back(function, checker.takeLayouts());
  }
  // A function no uncalled one reaches (a cycle of calls) keeps none.
  for (auto &[callee, record] : callees)
    result.emplace_back(cast<func::FuncOp>(callee), std::move(record->layouts));
  return result;
}
