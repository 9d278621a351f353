//===- ParseModule.h - Parse and verify a module, safely -------*- C++ -*-===//
//
// Every Lamina entry point that reads IR (lamina-run, lamina-compile, the
// Python package, schedules) parses it through here: parsed, then checked
// for what some upstream verifiers of MLIR 22.1 crash on or miss (found by
// fuzzing; each is then a located error), then verified.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_SUPPORT_PARSEMODULE_H
#define LAMINA_SUPPORT_PARSEMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir::lamina {

/// Parses `text` (named `sourceName` in locations) as a module in
/// `context` and verifies it; null after reporting to the context's
/// diagnostic handler.
OwningOpRef<ModuleOp> parseVerifiedModule(StringRef text, MLIRContext *context,
                                          StringRef sourceName);
OwningOpRef<ModuleOp> parseVerifiedModule(llvm::SourceMgr &sourceMgr,
                                          MLIRContext *context);

/// What upstream verifiers would crash on, or let through although it
/// cannot be printed and parsed again, in `root` (unverified), as errors:
/// a `gpu.func` or `gpu.launch` whose `workgroup_attributions` count is
/// negative or more than its body's arguments; an empty symbol name.
LogicalResult checkUpstreamVerifierHazards(Operation *root);

/// checkUpstreamVerifierHazards, then mlir::verify.
LogicalResult verifyGuarded(Operation *root);

} // namespace mlir::lamina

#endif // LAMINA_SUPPORT_PARSEMODULE_H
