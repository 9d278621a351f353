//===- TransformScript.h - Apply a transform script held as text -*- C++ -*-===//

#ifndef LAMINA_LIB_DIALECT_LAMINA_TRANSFORMS_TRANSFORMSCRIPT_H
#define LAMINA_LIB_DIALECT_LAMINA_TRANSFORMS_TRANSFORMSCRIPT_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {

/// Parses `text` (a module of transform named sequences) and applies the
/// sequence `entry` to `module` with the transform interpreter.
LogicalResult applyTransformScript(ModuleOp module, StringRef text,
                                   StringRef entry);

} // namespace mlir::lamina

#endif // LAMINA_LIB_DIALECT_LAMINA_TRANSFORMS_TRANSFORMSCRIPT_H
