//===- parse-fuzzer.cpp - Parse, verify and print IR ----------------------===//
//
// Any text: rejected with a located error, or a valid module whose printed
// form parses and verifies again and prints the same.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lamina::fuzz;

static std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream, OpPrintingFlags().assumeVerified());
  return text;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return testValidModule(
      data, size, [](ModuleOp module, DiagnosticCheck &diagnostics) {
        std::string printed = print(module);
        OwningOpRef<ModuleOp> again =
            parseValidModule(*module.getContext(), diagnostics, printed);
        if (!again)
          reportBug("a valid module's printed form is rejected:\n" + printed);
        if (print(*again) != printed)
          reportBug("a valid module prints differently after a round trip:\n" +
                    printed);
      });
}
