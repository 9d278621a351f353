//===- FuzzHarness.h - What every Lamina fuzzer shares ----------*- C++ -*-===//
//
// Each input runs in a fresh MLIRContext, so that a crash reproduces from
// its input alone. Besides crashes, hangs and sanitizer reports, a harness
// reports as a bug what breaks Lamina's promise about rejected input: a
// failure without an error diagnostic, or an error without a source
// location.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_TOOLS_FUZZERS_FUZZHARNESS_H
#define LAMINA_TOOLS_FUZZERS_FUZZHARNESS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mlir::lamina::fuzz {

/// Registers every dialect, extension and pass Lamina's tools know; call
/// once, from LLVMFuzzerInitialize (InitializeHarness.cpp defines the one
/// harnesses without a setup of their own share).
void initialize();

/// A context holding every registered dialect, single-threaded.
std::unique_ptr<mlir::MLIRContext> makeContext();

/// Aborts the run: libFuzzer saves the input as a crash.
[[noreturn]] void reportBug(const llvm::Twine &what);

/// Counts the error diagnostics of one input and checks that each names a
/// source location. Nothing is printed unless LAMINA_FUZZ_VERBOSE is set.
class DiagnosticCheck {
public:
  explicit DiagnosticCheck(mlir::MLIRContext &context);

  /// A failed `result` of `stage` must have reported an error.
  void expectReported(mlir::LogicalResult result, llvm::StringRef stage);

  unsigned getNumErrors() const { return numErrors; }

private:
  mlir::ScopedDiagnosticHandler handler;
  unsigned numErrors = 0;
};

/// Parses the input as a module (diagnostics go to the context), without
/// verifying it.
mlir::OwningOpRef<mlir::ModuleOp> parseModule(mlir::MLIRContext &context,
                                              llvm::StringRef text);

inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

/// Parses and verifies the input; null (with the rejection checked) when
/// it is not a valid module.
mlir::OwningOpRef<mlir::ModuleOp> parseValidModule(mlir::MLIRContext &context,
                                                   DiagnosticCheck &diagnostics,
                                                   llvm::StringRef text);

/// The whole of an IR harness's LLVMFuzzerTestOneInput: the input parsed
/// and verified in a fresh context (a rejection must be a located error),
/// then `test` on a valid module. Returns libFuzzer's 0.
int testValidModule(const uint8_t *data, size_t size,
                    llvm::function_ref<void(mlir::ModuleOp, DiagnosticCheck &)>
                        test);

/// Runs the textual pass pipeline `pipeline` on `module`; a harness whose
/// pipeline does not parse is a bug of the harness.
mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                llvm::StringRef pipeline);

} // namespace mlir::lamina::fuzz

#endif // LAMINA_TOOLS_FUZZERS_FUZZHARNESS_H
