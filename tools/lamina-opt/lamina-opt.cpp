//===- lamina-opt.cpp - Lamina's opt-style driver -------------------------===//
//
// Upstream's mlir-opt driver, except that input is verified as Lamina's
// other tools verify it (verifyGuarded): the parser does not verify, and a
// first pass checks for what upstream verifiers crash on before verifying.
//
//===----------------------------------------------------------------------===//

#include "lamina/InitAll.h"
#include "lamina/Support/ParseModule.h"
#include "LaminaTestDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace {
struct GuardedVerifyPass
    : public PassWrapper<GuardedVerifyPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GuardedVerifyPass)

  StringRef getArgument() const final { return "lamina-guarded-verify"; }
  StringRef getDescription() const final {
    return "Verify the input, checking first what upstream verifiers crash on";
  }
  void runOnOperation() override {
    if (failed(lamina::verifyGuarded(getOperation())))
      signalPassFailure();
  }
};
} // namespace

static LogicalResult runDriver(int argc, char **argv,
                               DialectRegistry &registry) {
  llvm::InitLLVM initLLVM(argc, argv);
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "Lamina optimizer driver\n", registry);
  MlirOptMainConfig cliConfig = MlirOptMainConfig::createFromCLOptions();
  if (cliConfig.shouldShowDialects()) {
    llvm::outs() << "Available Dialects:\n";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), "\n");
    llvm::outs() << "\n";
    return success();
  }
  if (cliConfig.shouldListPasses()) {
    printRegisteredPasses();
    return success();
  }
  MlirOptMainConfig config = cliConfig;
  config.verifyOnParsing(false).setPassPipelineSetupFn(
      [cliConfig](PassManager &pm) {
        pm.addPass(std::make_unique<GuardedVerifyPass>());
        return cliConfig.setupPassPipeline(pm);
      });

  std::string errorMessage;
  auto input = openInputFile(inputFilename, &errorMessage);
  auto output = input ? openOutputFile(outputFilename, &errorMessage) : nullptr;
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return failure();
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return failure();
  output->keep();
  return success();
}

int main(int argc, char **argv) {
  DialectRegistry registry;
  lamina::registerAllDialects(registry);
  lamina::test::registerLaminaTestDialect(registry);
  lamina::registerAllPasses();
  return asMainReturnCode(runDriver(argc, argv, registry));
}
