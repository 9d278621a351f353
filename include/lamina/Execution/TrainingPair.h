//===- TrainingPair.h - A function's forward / backward pair ----*- C++ -*-===//
//
// The training step of a function: lamina-generate-backward's forward and
// backward, each compiled alone for a target. `lamina-run --backward` runs
// it as one step; Python's autograd calls its two programs from a
// torch.autograd.Function, keeping the saved values in between.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_TRAININGPAIR_H
#define LAMINA_EXECUTION_TRAININGPAIR_H

#include "lamina/Execution/Program.h"

#include <functional>
#include <optional>

namespace mlir::lamina {

/// How the parameters' gradients are reduced over the data-parallel
/// replicas of a device grid (lamina-reduce-replica-gradients).
struct ReplicaReduction {
  /// The parameter arguments are `firstParameter` onwards, one per owner.
  int64_t firstParameter = 0;
  /// Per parameter argument, the replica its gradient is reduced to (a
  /// ZeRO stage-2 optimizer's owner), or -1 for every replica.
  llvm::SmallVector<int64_t> owners;
  /// The mean over the replicas rather than the sum.
  bool mean = true;
  /// Each reduction starts as its gradient is final.
  bool overlap = true;
};

struct TrainingPairOptions {
  /// The arguments that get no gradient (inputs that do not require one).
  llvm::SmallVector<int64_t> constants;
  std::optional<ReplicaReduction> replicas;
  /// Differentiate each distinct block of the model's block lists once
  /// (lamina-outline-blocks before lamina-generate-backward); false
  /// differentiates the program with every layer inline.
  bool outlineBlocks = true;
  /// Called as each step starts ("differentiating (…)", "compiling @f
  /// (…)"): what a long compile reports.
  std::function<void(llvm::StringRef)> onStep;
};

/// The error of a step of TrainingPair::compile before its programs
/// compile (differentiating, reducing over replicas): what failed, in
/// words; the diagnostics went to the context's handler.
class TrainingPairError : public llvm::ErrorInfo<TrainingPairError> {
public:
  explicit TrainingPairError(std::string what) : what(std::move(what)) {}
  void log(llvm::raw_ostream &os) const override { os << what; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  static char ID;

private:
  std::string what;
};

class TrainingPair {
public:
  /// Differentiates `entry` of `module` (which stays as it is) and compiles
  /// `@<entry>_forward` and `@<entry>_backward`, each alone, for `target`.
  static llvm::Expected<TrainingPair>
  compile(ModuleOp module, llvm::StringRef entry, const ProgramTarget &target,
          const TrainingPairOptions &options = {});

  /// The differentiated module the two programs were compiled from (with
  /// its replica reductions).
  ModuleOp getModule() const { return *module; }
  /// Takes the entry's arguments; returns its results, then the saved
  /// values.
  Program &getForward() { return *forward; }
  /// Takes the entry's arguments, the saved values and one cotangent per
  /// result; returns the gradients.
  Program &getBackward() { return *backward; }
  /// What each result of the entry is, as its cotangent is passed: a
  /// sharded result's cotangent is this rank's block.
  llvm::ArrayRef<ArgumentSpec> getResults() const {
    return forward->getResults().take_front(numResults);
  }
  size_t getNumSaved() const {
    return forward->getResults().size() - numResults;
  }
  /// The gradients the backward returns, in argument order.
  llvm::ArrayRef<ArgumentSpec> getGradients() const {
    return backward->getResults();
  }
  /// The indices of the arguments the gradients are of.
  llvm::ArrayRef<int64_t> getGradientArguments() const { return gradientArgs; }

  /// One step: the forward on `prepared` (`args`, prepared by the forward),
  /// then the backward on `args`, the saved values and `cotangents`; the
  /// gradients.
  llvm::Expected<std::vector<HostTensor>>
  step(const Program::PreparedArguments &prepared,
       llvm::ArrayRef<HostTensor> args, llvm::ArrayRef<HostTensor> cotangents);

private:
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<Program> forward, backward;
  size_t numResults = 0;
  llvm::SmallVector<int64_t> gradientArgs;
};

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_TRAININGPAIR_H
