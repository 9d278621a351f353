//===- FuzzHarness.cpp - What every Lamina fuzzer shares ------------------===//

#include "FuzzHarness.h"

#include "lamina/InitAll.h"
#include "lamina/Support/ParseModule.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

/// Lamina's instrumented code sees LLVM's allocator annotations (which
/// poison the free space of a BumpPtrAllocator's slabs), libMLIR.so, built
/// without ASan, does not: its allocations from the same slabs would be
/// reported as uses of poisoned memory.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace {
DialectRegistry &getRegistry() {
  static DialectRegistry registry;
  return registry;
}

bool isVerbose() {
  static bool verbose = std::getenv("LAMINA_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

/// Whether `location` points into some source: a file position, possibly
/// wrapped in names, call sites or fusions.
bool isLocated(Location location) {
  bool located = false;
  location->walk([&](Location inner) {
    if (isa<FileLineColRange>(inner)) {
      located = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return located;
}
} // namespace

void mlir::lamina::fuzz::initialize() {
  mlir::lamina::registerAllDialects(getRegistry());
  mlir::lamina::registerAllPasses();
}

std::unique_ptr<MLIRContext> mlir::lamina::fuzz::makeContext() {
  return std::make_unique<MLIRContext>(getRegistry(),
                                       MLIRContext::Threading::DISABLED);
}

void mlir::lamina::fuzz::reportBug(const llvm::Twine &what) {
  llvm::errs() << "lamina fuzzer: bug: " << what << "\n";
  std::abort();
}

mlir::lamina::fuzz::DiagnosticCheck::DiagnosticCheck(MLIRContext &context)
    : handler(&context, [this](Diagnostic &diagnostic) {
        if (isVerbose())
          llvm::errs() << diagnostic.getLocation() << ": " << diagnostic
                       << "\n";
        if (diagnostic.getSeverity() != DiagnosticSeverity::Error)
          return success();
        ++numErrors;
        if (!isLocated(diagnostic.getLocation()))
          reportBug("an error without a source location: " + diagnostic.str());
        return success();
      }) {}

void mlir::lamina::fuzz::DiagnosticCheck::expectReported(
    LogicalResult result, llvm::StringRef stage) {
  if (failed(result) && numErrors == 0)
    reportBug(stage + " failed without an error diagnostic");
}

OwningOpRef<ModuleOp> mlir::lamina::fuzz::parseModule(MLIRContext &context,
                                                      llvm::StringRef text) {
  // The lexer reads the byte after the end; a std::string holds a NUL
  // there, libFuzzer's buffer holds nothing.
  std::string source = text.str();
  ParserConfig config(&context, /*verifyAfterParse=*/false);
  return parseSourceString<ModuleOp>(source, config, "input.mlir");
}

OwningOpRef<ModuleOp> mlir::lamina::fuzz::parseValidModule(
    MLIRContext &context, DiagnosticCheck &diagnostics, llvm::StringRef text) {
  OwningOpRef<ModuleOp> module = parseModule(context, text);
  if (!module) {
    diagnostics.expectReported(failure(), "parsing");
    return nullptr;
  }
  if (failed(verifyGuarded(*module))) {
    diagnostics.expectReported(failure(), "verification");
    return nullptr;
  }
  return module;
}

int mlir::lamina::fuzz::testValidModule(
    const uint8_t *data, size_t size,
    llvm::function_ref<void(ModuleOp, DiagnosticCheck &)> test) {
  std::unique_ptr<MLIRContext> context = makeContext();
  DiagnosticCheck diagnostics(*context);
  OwningOpRef<ModuleOp> module =
      parseValidModule(*context, diagnostics, asText(data, size));
  if (module)
    test(*module, diagnostics);
  return 0;
}

LogicalResult mlir::lamina::fuzz::runPipeline(ModuleOp module,
                                              llvm::StringRef pipeline) {
  PassManager pm(module->getContext());
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(parsePassPipeline(pipeline, pm, errorStream)))
    reportBug("the harness's pipeline '" + pipeline +
              "' does not parse: " + error);
  return pm.run(module);
}
