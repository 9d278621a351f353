//===- ScheduleSession.h - Apply schedule primitives one by one -*- C++ -*-===//
//
// A payload module parsed once into a context of its own, to which a
// schedule's primitives are applied as they are recorded: one transform
// interpreter run per primitive instead of a fresh parse and a replay of the
// whole script after each one.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_TRANSFORMS_SCHEDULESESSION_H
#define LAMINA_LAMINA_TRANSFORMS_SCHEDULESESSION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir {
class DialectRegistry;
namespace lamina {

/// One payload module and the context that owns it, transformed in place by
/// successive transform scripts.
class ScheduleSession {
public:
  /// Parses `source` (named "program.mlir" in diagnostics) into a new
  /// context with the dialects and extensions of `registry`. Returns null
  /// and the parser's diagnostics in `diagnostics` when it does not parse.
  static std::unique_ptr<ScheduleSession>
  create(const DialectRegistry &registry, StringRef source,
         std::string &diagnostics);

  /// Applies the `@__transform_main` of `script` (named "schedule.mlir" in
  /// diagnostics) to the payload with one transform interpreter run. On
  /// failure the payload is left as it was and `diagnostics` holds the
  /// errors and their notes.
  LogicalResult apply(StringRef script, std::string &diagnostics);

  /// The payload as text.
  std::string getIr();

  /// A copy of the payload, in the session's context.
  OwningOpRef<ModuleOp> clonePayload() const { return payload.get().clone(); }
  /// The context, which the copies share.
  const std::shared_ptr<MLIRContext> &getContext() const { return context; }

  /// How many times the transform interpreter ran on this session's payload,
  /// failed runs included.
  int64_t getInterpreterRuns() const { return interpreterRuns; }

  /// A number that identifies this session's context among all contexts
  /// sessions created in this process (addresses may be reused; this is not).
  uint64_t getContextId() const { return contextId; }

private:
  ScheduleSession(std::shared_ptr<MLIRContext> context,
                  OwningOpRef<ModuleOp> payload);

  /// Declared before the payload, which it must outlive.
  std::shared_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> payload;
  int64_t interpreterRuns = 0;
  uint64_t contextId;
};

} // namespace lamina
} // namespace mlir

#endif // LAMINA_LAMINA_TRANSFORMS_SCHEDULESESSION_H
