//===- pipeline-fuzzer.cpp - One of Lamina's pipelines on valid IR --------===//
//
// Built once per pipeline: LAMINA_FUZZ_PIPELINE is the textual pipeline,
// LAMINA_FUZZ_TRANSLATE whether its result is translated to LLVM IR (as
// the JIT does). A valid module must compile, or fail with located errors.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

using namespace mlir;
using namespace mlir::lamina::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return testValidModule(
      data, size, [](ModuleOp module, DiagnosticCheck &diagnostics) {
        LogicalResult compiled = runPipeline(module, LAMINA_FUZZ_PIPELINE);
        diagnostics.expectReported(compiled, LAMINA_FUZZ_PIPELINE);
        if (failed(compiled) || !LAMINA_FUZZ_TRANSLATE)
          return;
        llvm::LLVMContext llvmContext;
        std::unique_ptr<llvm::Module> translated =
            translateModuleToLLVMIR(module, llvmContext);
        diagnostics.expectReported(success(translated != nullptr),
                                   "translation to LLVM IR");
      });
}
