//===- TransformScript.h - Apply a transform script held as text -*- C++ -*-===//

#ifndef LAMINA_SUPPORT_TRANSFORMSCRIPT_H
#define LAMINA_SUPPORT_TRANSFORMSCRIPT_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {

/// Parses `text` (a module of transform named sequences, named `sourceName`
/// in diagnostics) and applies its sequence `entry` to `module` with the
/// transform interpreter: the compiler's own generated scripts and users'
/// schedules (`@__transform_main`) alike. Diagnostics go to the context's
/// handler.
LogicalResult applyTransformScript(ModuleOp module, StringRef text,
                                   StringRef entry,
                                   StringRef sourceName = "schedule");

/// Reads the schedule file `path` and applies its `@__transform_main` to
/// `module`; an unreadable file is an error on the module.
LogicalResult applyScheduleFile(ModuleOp module, StringRef path);

} // namespace mlir::lamina

#endif // LAMINA_SUPPORT_TRANSFORMSCRIPT_H
