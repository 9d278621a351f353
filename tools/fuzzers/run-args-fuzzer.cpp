//===- run-args-fuzzer.cpp - lamina-run's argument handling ---------------===//
//
// The input is a list of --input values separated by "@@\n": each is a
// .npy file's bytes (from its magic) or a scalar's text. They are read as
// lamina-run reads them, checked against a compiled layer's signature,
// prepared (weights packed) and run: an error, or results of the
// signature's shapes.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "lamina/Execution/Program.h"
#include "lamina/Execution/RunInputs.h"

#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::fuzz;

/// A linear layer with bias, GELU and training dropout: tensors of three
/// ranks, a packed weight and an i64 scalar.
static constexpr llvm::StringLiteral kProgram = R"mlir(
func.func @main(%x: tensor<2x3x8xf32>, %w: tensor<16x8xf32>,
                %b: tensor<16xf32>, %seed: i64) -> tensor<2x3x16xf32> {
  %h = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<2x3x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  %y = lamina.dropout %h <p = 0.25, training> seed %seed : tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}
)mlir";

static Program *program;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  initialize();
  static std::unique_ptr<MLIRContext> context = makeContext();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kProgram, context.get());
  if (!module)
    reportBug("the harness's program does not parse");
  auto compiled =
      Program::compile(std::move(module), "main", "lamina-cpu-pipeline");
  if (!compiled)
    reportBug("the harness's program does not compile: " +
              llvm::toString(compiled.takeError()));
  program = compiled->release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SmallVector<llvm::StringRef> values;
  asText(data, size).split(values, "@@\n");
  std::vector<HostTensor> args;
  for (llvm::StringRef value : values) {
    llvm::Expected<HostTensor> arg = value.starts_with("\x93NUMPY")
                                         ? parseNpy(value, "input.npy")
                                         : parseScalarInput(value);
    if (!arg) {
      llvm::consumeError(arg.takeError());
      return 0;
    }
    args.push_back(std::move(*arg));
  }
  auto prepared = program->prepare(std::move(args));
  if (!prepared) {
    llvm::consumeError(prepared.takeError());
    return 0;
  }
  auto results = program->run(*prepared);
  if (!results)
    reportBug("prepared arguments fail to run: " +
              llvm::toString(results.takeError()));
  if (results->size() != 1 ||
      llvm::ArrayRef((*results)[0].shape) != llvm::ArrayRef<int64_t>{2, 3, 16})
    reportBug("the results do not have the signature's shapes");
  return 0;
}
