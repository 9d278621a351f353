//===- Schedule.cpp - Apply a transform-dialect schedule ------------------===//

#include "lamina/Execution/Schedule.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

LogicalResult mlir::lamina::applySchedule(ModuleOp module,
                                          llvm::StringRef source,
                                          llvm::StringRef name) {
  MLIRContext *context = module.getContext();
  OwningOpRef<ModuleOp> schedule =
      parseSourceString<ModuleOp>(source, ParserConfig(context), name);
  if (!schedule)
    return failure();
  transform::TransformOpInterface entry =
      transform::detail::findTransformEntryPoint(module, *schedule);
  if (!entry)
    return schedule->emitError()
           << "the schedule defines no @"
           << transform::TransformDialect::kTransformEntryPointSymbolName;
  return transform::applyTransformNamedSequence(
      module, entry, *schedule,
      transform::TransformOptions().enableExpensiveChecks(false));
}
