//===- TransformScript.cpp - Apply a transform script held as text --------===//

#include "lamina/Support/TransformScript.h"

#include "lamina/Support/ParseModule.h"

#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::lamina;

/// The first op of `sequence` that is not a transform op (patterns and PDL
/// included), or null.
static Operation *findForeignOp(Operation *sequence) {
  Operation *foreign = nullptr;
  sequence->walk([&](Operation *op) {
    if (op == sequence)
      return WalkResult::advance();
    StringRef dialect = op->getName().getDialectNamespace();
    if (dialect == "transform" || dialect == "pdl" || dialect == "pdl_interp")
      return WalkResult::advance();
    foreign = op;
    return WalkResult::interrupt();
  });
  return foreign;
}

FailureOr<TransformScript>
mlir::lamina::parseTransformScript(MLIRContext *context, StringRef text,
                                   StringRef entry, StringRef sourceName) {
  TransformScript script;
  script.library = parseVerifiedModule(text, context, sourceName);
  if (!script.library)
    return failure(); // the parser reported why
  script.entry = script.library->lookupSymbol(entry);
  if (!script.entry)
    return script.library->emitError()
           << "the schedule defines no @" << entry;
  if (Operation *foreign = findForeignOp(script.entry))
    return foreign->emitOpError()
           << "is not a transform op; a schedule's @" << entry
           << " holds transform ops only";
  return script;
}

LogicalResult mlir::lamina::applyTransformScript(Operation *payload,
                                                 StringRef text,
                                                 StringRef entry,
                                                 StringRef sourceName) {
  FailureOr<TransformScript> script =
      parseTransformScript(payload->getContext(), text, entry, sourceName);
  if (failed(script))
    return failure();
  return transform::applyTransformNamedSequence(
      payload, script->entry, *script->library, transform::TransformOptions());
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
