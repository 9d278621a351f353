//===- GpuProgram.h - GPU artefacts called from C++ ------------*- C++ -*-===//
//
// `lamina-run --target=cuda`: a module built into a GPU artefact
// (GpuArtefact.h) in a temporary directory, loaded into this process, and
// its entry point called on host tensors, copied to and from the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_GPUPROGRAM_H
#define LAMINA_EXECUTION_GPUPROGRAM_H

#include "lamina/Execution/GpuArtefact.h"
#include "lamina/Execution/HostTensor.h"
#include "lamina/Execution/JitProgram.h"

#include "mlir/IR/OwningOpRef.h"

#include <memory>

namespace mlir::lamina {

class GpuProgram {
public:
  /// Builds and loads the artefact of `module`; fails with the reason when
  /// the entry point is unknown, compilation fails or no GPU is usable.
  static llvm::Expected<std::unique_ptr<GpuProgram>>
  compile(OwningOpRef<ModuleOp> module, llvm::StringRef entry,
          const GpuArtefactOptions &options);
  ~GpuProgram();

  llvm::ArrayRef<ArgumentSpec> getInputs() const { return inputs; }
  llvm::ArrayRef<ArgumentSpec> getResults() const { return results; }

  /// Copies `args` to the GPU, calls the entry point (which runs to
  /// completion) and copies the results back.
  llvm::Expected<std::vector<HostTensor>>
  run(llvm::ArrayRef<HostTensor> args) const;

private:
  GpuProgram() = default;

  std::string directory;
  void *library = nullptr;
  void (*entry)(void **) = nullptr;
  void *(*memAlloc)(uint64_t, void *, bool) = nullptr;
  void (*memFree)(void *, void *) = nullptr;
  void (*memcpy)(void *, void *, size_t, void *) = nullptr;
  void (*streamSynchronize)(void *) = nullptr;
  llvm::SmallVector<ArgumentSpec> inputs, results;
};

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_GPUPROGRAM_H
