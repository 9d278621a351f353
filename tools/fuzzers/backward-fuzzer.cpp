//===- backward-fuzzer.cpp - Reverse-mode differentiation of valid IR -----===//
//
// Differentiates the input's first function with lamina-generate-backward,
// then compiles the training pair for the CPU; either succeeds or fails
// with located errors.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::lamina::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return testValidModule(
      data, size, [](ModuleOp module, DiagnosticCheck &diagnostics) {
        auto functions = module.getOps<func::FuncOp>();
        if (functions.empty())
          return;
        StringRef name = (*functions.begin()).getSymName();
        // Pass options cannot spell every symbol name.
        if (!llvm::all_of(name, [](char c) {
              return llvm::isAlnum(c) || c == '_' || c == '.';
            }))
          return;
        std::string pipeline =
            ("builtin.module(lamina-generate-backward{function=" + name + "})")
                .str();
        LogicalResult differentiated = runPipeline(module, pipeline);
        diagnostics.expectReported(differentiated, "lamina-generate-backward");
        if (failed(differentiated))
          return;
        diagnostics.expectReported(
            runPipeline(
                module,
                "builtin.module(lamina-host-prepare,lamina-cpu-pipeline)"),
            "the CPU pipeline after lamina-generate-backward");
      });
}
