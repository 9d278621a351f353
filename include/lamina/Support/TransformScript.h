//===- TransformScript.h - Apply a transform script held as text -*- C++ -*-===//

#ifndef LAMINA_SUPPORT_TRANSFORMSCRIPT_H
#define LAMINA_SUPPORT_TRANSFORMSCRIPT_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {

/// A parsed transform script and the named sequence to interpret.
struct TransformScript {
  OwningOpRef<ModuleOp> library;
  Operation *entry = nullptr;
};

/// Parses `text` (named `sourceName` in diagnostics) in `context` and finds
/// its sequence `entry`, which must hold transform ops only: the
/// interpreter crashes on any other op (llvm/llvm-project#117281), so such
/// a script is an error on that op. Diagnostics go to the context's handler.
FailureOr<TransformScript> parseTransformScript(MLIRContext *context,
                                                StringRef text,
                                                StringRef entry,
                                                StringRef sourceName);

/// Parses `text` (a module of transform named sequences, named `sourceName`
/// in diagnostics) and applies its sequence `entry` to `payload` (a module,
/// or one function) with the transform interpreter: the compiler's own
/// generated scripts and users' schedules (`@__transform_main`) alike.
/// Diagnostics go to the context's handler.
LogicalResult applyTransformScript(Operation *payload, StringRef text,
                                   StringRef entry,
                                   StringRef sourceName = "schedule");

/// Reads the schedule file `path` and applies its `@__transform_main` to
/// `module`; an unreadable file is an error on the module.
LogicalResult applyScheduleFile(ModuleOp module, StringRef path);

} // namespace mlir::lamina

#endif // LAMINA_SUPPORT_TRANSFORMSCRIPT_H
