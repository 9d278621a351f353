//===- ScheduleSession.cpp - Apply schedule primitives one by one ---------===//

#include "lamina/Lamina/Transforms/ScheduleSession.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Support/ParseModule.h"
#include "lamina/Support/TransformScript.h"

#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>

using namespace mlir;
using namespace mlir::lamina;

namespace {

/// Collects the diagnostics of `context` as text, located like lamina-opt's
/// (file:line:col: error: …), for as long as it lives.
class DiagnosticCapture {
public:
  DiagnosticCapture(MLIRContext *context, std::string &text)
      : stream(text), handler(sourceMgr, context, stream) {}

private:
  llvm::raw_string_ostream stream;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler;
};

uint64_t nextContextId() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

} // namespace

ScheduleSession::ScheduleSession(std::shared_ptr<MLIRContext> context,
                                 OwningOpRef<ModuleOp> payload)
    : context(std::move(context)), payload(std::move(payload)),
      contextId(nextContextId()) {}

std::unique_ptr<ScheduleSession>
ScheduleSession::create(const DialectRegistry &registry, StringRef source,
                        std::string &diagnostics) {
  auto context = std::make_shared<MLIRContext>(registry);
  OwningOpRef<ModuleOp> payload;
  {
    DiagnosticCapture capture(context.get(), diagnostics);
    payload = parseVerifiedModule(source, context.get(), "program.mlir");
  }
  if (!payload)
    return nullptr;
  recordModulePaths(*payload);
  return std::unique_ptr<ScheduleSession>(
      new ScheduleSession(std::move(context), std::move(payload)));
}

LogicalResult ScheduleSession::apply(StringRef script,
                                     std::string &diagnostics) {
  DiagnosticCapture capture(context.get(), diagnostics);
  FailureOr<TransformScript> parsed = parseTransformScript(
      context.get(), script, "__transform_main", "schedule.mlir");
  if (failed(parsed))
    return failure();
  // A failing script may have changed part of its payload already: it runs
  // on a copy, which replaces the payload only when the script succeeds.
  OwningOpRef<ModuleOp> candidate = payload->clone();
  ++interpreterRuns;
  if (failed(transform::applyTransformNamedSequence(
          *candidate, parsed->entry, *parsed->library,
          transform::TransformOptions())))
    return failure();
  payload = std::move(candidate);
  return success();
}

std::string ScheduleSession::getIr() {
  std::string text;
  llvm::raw_string_ostream os(text);
  payload->print(os);
  return text;
}
