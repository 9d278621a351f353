//===- Schedule.h - Apply a transform-dialect schedule ----------*- C++ -*-===//

#ifndef LAMINA_EXECUTION_SCHEDULE_H
#define LAMINA_EXECUTION_SCHEDULE_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {

/// Applies the schedule `source` (a module with `transform.with_named_sequence`
/// and `@__transform_main`, read from `name`) to `module` with the transform
/// interpreter. Diagnostics go to the context's handler.
LogicalResult applySchedule(ModuleOp module, llvm::StringRef source,
                            llvm::StringRef name);

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_SCHEDULE_H
