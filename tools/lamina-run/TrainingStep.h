//===- TrainingStep.h - lamina-run --backward -------------------*- C++ -*-===//
//
// One training step of a function: lamina-generate-backward's forward /
// backward pair, each compiled alone for the host, run one after the other.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_TOOLS_LAMINA_RUN_TRAININGSTEP_H
#define LAMINA_TOOLS_LAMINA_RUN_TRAININGSTEP_H

#include "lamina/Execution/JitProgram.h"

namespace mlir::lamina {

class TrainingStep {
public:
  /// Differentiates `entry` of `module` and compiles `@<entry>_forward` and
  /// `@<entry>_backward` with the pass pipeline `pipeline`.
  static llvm::Expected<TrainingStep>
  compile(ModuleOp module, llvm::StringRef entry, llvm::StringRef pipeline);

  /// The forward's arguments (the entry's).
  JitProgram &getForward() { return *forward; }
  /// What each result of the entry is, as its cotangent is passed: a
  /// sharded result's cotangent is this rank's block.
  llvm::ArrayRef<ArgumentSpec> getResults() const {
    return forward->getResults().take_front(numResults);
  }
  /// The gradients the backward returns, in argument order.
  llvm::ArrayRef<ArgumentSpec> getGradients() const {
    return backward->getResults();
  }
  /// The indices of the arguments the gradients are of.
  llvm::ArrayRef<int64_t> getGradientArguments() const { return gradientArgs; }

  /// Runs the forward on `prepared` (`args`, prepared) and the backward on
  /// `args`, the saved values and `cotangents`: the gradients.
  llvm::Expected<std::vector<HostTensor>>
  run(const JitProgram::PreparedArguments &prepared,
      llvm::ArrayRef<HostTensor> args, llvm::ArrayRef<HostTensor> cotangents);

private:
  std::unique_ptr<JitProgram> forward, backward;
  size_t numResults = 0;
  llvm::SmallVector<int64_t> gradientArgs;
};

} // namespace mlir::lamina

#endif // LAMINA_TOOLS_LAMINA_RUN_TRAININGSTEP_H
