//===- TrainingPair.cpp - A function's forward / backward pair ------------===//

#include "lamina/Execution/TrainingPair.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::lamina;

char TrainingPairError::ID;

/// Comma-separated `values`.
static std::string join(llvm::ArrayRef<int64_t> values) {
  std::string text;
  for (auto [i, value] : llvm::enumerate(values))
    text += (i ? "," : "") + std::to_string(value);
  return text;
}

/// `pipeline` on `module`; on failure, a TrainingPairError saying `what`.
static llvm::Error runStep(ModuleOp module, const std::string &pipeline,
                           llvm::StringRef what) {
  if (llvm::Error error = runPassPipeline(module, pipeline)) {
    llvm::consumeError(std::move(error));
    return llvm::make_error<TrainingPairError>(what.str());
  }
  return llvm::Error::success();
}

/// The replica reduction's pipeline for the pair's gradients, or "" when
/// no parameter gets a gradient.
static std::string reductionPipeline(const ReplicaReduction &replicas,
                                     TrainingPairAttr pair) {
  SmallVector<int64_t> results, roots;
  auto parameters = static_cast<int64_t>(replicas.owners.size());
  for (auto [index, argument] : llvm::enumerate(pair.getGradients())) {
    int64_t parameter = argument - replicas.firstParameter;
    if (parameter < 0 || parameter >= parameters)
      continue;
    results.push_back(index);
    roots.push_back(replicas.owners[parameter]);
  }
  if (results.empty())
    return "";
  std::string options = llvm::formatv(
      "function={0} results={1} mean={2} overlap={3}",
      pair.getBackward().getValue(), join(results), replicas.mean,
      replicas.overlap);
  if (llvm::any_of(roots, [](int64_t root) { return root >= 0; }))
    options += " roots=" + join(roots);
  return "lamina-reduce-replica-gradients{" + options + "}";
}

/// `function` of `module` compiled alone: the other public functions are
/// made private and dropped (each would be compiled too).
static llvm::Expected<std::unique_ptr<Program>>
compileAlone(ModuleOp module, llvm::StringRef function,
             const ProgramTarget &target,
             const TrainingPairOptions &options) {
  if (options.onStep) {
    std::string pipeline = target.getCachedPipeline();
    options.onStep(("compiling @" + function + " (" +
                    (pipeline.empty() ? target.getName().str() : pipeline) +
                    ")")
                       .str());
  }
  OwningOpRef<ModuleOp> alone(module.clone());
  if (llvm::Error error = runPassPipeline(
          *alone, ("symbol-privatize{exclude=" + function + "},symbol-dce")
                      .str()))
    return std::move(error);
  return Program::compile(std::move(alone), function, target);
}

llvm::Expected<TrainingPair>
TrainingPair::compile(ModuleOp module, llvm::StringRef entry,
                      const ProgramTarget &target,
                      const TrainingPairOptions &options) {
  if (options.onStep)
    options.onStep("differentiating (lamina-generate-backward)");
  OwningOpRef<ModuleOp> differentiated(module.clone());
  std::string generate = options.outlineBlocks ? "lamina-outline-blocks," : "";
  generate += "lamina-generate-backward{function=" + entry.str();
  if (!options.constants.empty())
    generate += " constants=" + join(options.constants);
  generate += "}";
  if (llvm::Error error =
          runStep(*differentiated, generate,
                  "the program cannot be differentiated"))
    return std::move(error);
  TrainingPairAttr pair = getTrainingPair(*differentiated, entry);
  if (!pair)
    return llvm::make_error<TrainingPairError>(
        ("lamina-generate-backward recorded no pair for @" + entry).str());
  if (options.replicas) {
    std::string reduce = reductionPipeline(*options.replicas, pair);
    if (!reduce.empty())
      if (llvm::Error error =
              runStep(*differentiated, reduce,
                      "the gradients cannot be reduced over the "
                      "data-parallel replicas"))
        return std::move(error);
  }
  TrainingPair result;
  llvm::append_range(result.gradientArgs, pair.getGradients());
  auto forward =
      compileAlone(*differentiated, pair.getForward().getValue(), target,
                   options);
  if (!forward)
    return forward.takeError();
  auto backward =
      compileAlone(*differentiated, pair.getBackward().getValue(), target,
                   options);
  if (!backward)
    return backward.takeError();
  result.module = std::move(differentiated);
  result.forward = std::move(*forward);
  result.backward = std::move(*backward);
  result.numResults = result.forward->getResults().size() - pair.getSaved();
  return result;
}

llvm::Expected<std::vector<HostTensor>>
TrainingPair::step(const Program::PreparedArguments &prepared,
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
