//===- TransformScript.cpp - Apply a transform script held as text --------===//

#include "lamina/Support/TransformScript.h"

#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

LogicalResult mlir::lamina::applyTransformScript(ModuleOp module,
                                                 StringRef text,
                                                 StringRef entry,
                                                 StringRef sourceName) {
  OwningOpRef<ModuleOp> library = parseSourceString<ModuleOp>(
      text, ParserConfig(module.getContext()), sourceName);
  if (!library)
    return failure(); // the parser reported why
  Operation *sequence = library->lookupSymbol(entry);
  if (!sequence)
    return library->emitError() << "the schedule defines no @" << entry;
  return transform::applyTransformNamedSequence(
      module, sequence, *library, transform::TransformOptions());
}

LogicalResult mlir::lamina::applyScheduleFile(ModuleOp module,
                                              StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return module.emitError() << "cannot read the schedule '" << path
                              << "': " << buffer.getError().message();
  return applyTransformScript(module, (*buffer)->getBuffer(),
                              "__transform_main", path);
}
