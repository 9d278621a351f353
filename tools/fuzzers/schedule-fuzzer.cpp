//===- schedule-fuzzer.cpp - Schedules applied to an example program ------===//
//
// The input is a schedule (a transform module with @__transform_main); it
// is applied to the GPT-2 block example (LAMINA_FUZZ_PAYLOAD, read once),
// and a schedule that applies must leave a program that verifies and
// partitions, or is rejected with located errors.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "lamina/Support/TransformScript.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::lamina::fuzz;

static std::string &getPayload() {
  static std::string payload;
  return payload;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  initialize();
  auto buffer = llvm::MemoryBuffer::getFile(LAMINA_FUZZ_PAYLOAD);
  if (!buffer)
    reportBug("cannot read the payload " LAMINA_FUZZ_PAYLOAD);
  getPayload() = (*buffer)->getBuffer().str();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::unique_ptr<MLIRContext> context = makeContext();
  DiagnosticCheck diagnostics(*context);
  OwningOpRef<ModuleOp> program = parseModule(*context, getPayload());
  if (!program)
    reportBug("the payload does not parse");
  LogicalResult applied = mlir::lamina::applyTransformScript(
      *program, asText(data, size), "__transform_main");
  diagnostics.expectReported(applied, "the schedule");
  if (failed(applied))
    return 0;
  if (failed(verify(*program)))
    reportBug("a schedule that applied left a program that does not verify");
  diagnostics.expectReported(
      runPipeline(*program, "builtin.module(lamina-decompose,lamina-partition,"
                            "lamina-fuse-epilogues)"),
      "partitioning the scheduled program");
  return 0;
}
