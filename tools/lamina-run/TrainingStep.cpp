//===- TrainingStep.cpp - lamina-run --backward ---------------------------===//

#include "TrainingStep.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::lamina;

/// `function` of `module` compiled alone: the other public functions are
/// made private and dropped (each would be compiled too).
static llvm::Expected<std::unique_ptr<JitProgram>>
compileAlone(ModuleOp module, llvm::StringRef function,
             llvm::StringRef pipeline) {
  OwningOpRef<ModuleOp> alone(module.clone());
  if (llvm::Error error = runPassPipeline(
          *alone, ("symbol-privatize{exclude=" + function + "},symbol-dce")
                      .str()))
    return std::move(error);
  auto program = JitProgram::compile(std::move(alone), function, pipeline);
  if (program)
    for (const std::string &warning : (*program)->getWarnings())
      llvm::errs() << "lamina-run: warning: " << warning << "\n";
  return program;
}

llvm::Expected<TrainingStep> TrainingStep::compile(ModuleOp module,
                                                   llvm::StringRef entry,
                                                   llvm::StringRef pipeline) {
  if (llvm::Error error = runPassPipeline(
          module, ("lamina-generate-backward{function=" + entry + "}").str()))
    return std::move(error);
  TrainingPairAttr pair = getTrainingPair(module, entry);
  if (!pair)
    return llvm::createStringError(std::errc::invalid_argument,
                                   "lamina-generate-backward recorded no "
                                   "pair for @%s",
                                   entry.str().c_str());
  TrainingStep step;
  llvm::append_range(step.gradientArgs, pair.getGradients());
  auto forward = compileAlone(module, pair.getForward().getValue(), pipeline);
  if (!forward)
    return forward.takeError();
  auto backward =
      compileAlone(module, pair.getBackward().getValue(), pipeline);
  if (!backward)
    return backward.takeError();
  step.forward = std::move(*forward);
  step.backward = std::move(*backward);
  step.numResults = step.forward->getResults().size() - pair.getSaved();
  return step;
}

llvm::Expected<std::vector<HostTensor>>
TrainingStep::run(const JitProgram::PreparedArguments &prepared,
                  llvm::ArrayRef<HostTensor> args,
                  llvm::ArrayRef<HostTensor> cotangents) {
  auto results = forward->run(prepared);
  if (!results)
    return results.takeError();
  std::vector<HostTensor> backwardArgs = viewAll(args);
  for (size_t i = numResults; i < results->size(); ++i)
    backwardArgs.push_back(std::move((*results)[i]));
  for (const HostTensor &cotangent : cotangents)
    backwardArgs.push_back(cotangent.view());
  auto ready = backward->prepare(std::move(backwardArgs));
  if (!ready)
    return ready.takeError();
  return backward->run(*ready);
}
