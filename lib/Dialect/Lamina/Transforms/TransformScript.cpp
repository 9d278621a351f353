//===- TransformScript.cpp - Apply a transform script held as text --------===//

#include "TransformScript.h"

#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

LogicalResult mlir::lamina::applyTransformScript(ModuleOp module,
                                                 StringRef text,
                                                 StringRef entry) {
  OwningOpRef<ModuleOp> library =
      parseSourceString<ModuleOp>(text, module.getContext());
  if (!library)
    return module.emitError("internal error: the generated schedule does not "
                            "parse");
  Operation *sequence = library->lookupSymbol(entry);
  return transform::applyTransformNamedSequence(
      module, sequence, *library, transform::TransformOptions());
}
