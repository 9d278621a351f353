//===- CudaTarget.h - Programs on NVIDIA GPUs -------------------*- C++ -*-===//
//
// The CUDA target of a Program (Program.h): the module built into a GPU
// artefact (GpuArtefact.h) in a temporary directory and loaded into this
// process. Host tensors are copied to the GPU and back around each call;
// `Program::runResident` takes device buffers on a CUDA stream instead.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_CUDATARGET_H
#define LAMINA_EXECUTION_CUDATARGET_H

#include "lamina/Execution/Executable.h"
#include "lamina/Execution/GpuArtefact.h"

namespace mlir::lamina {

/// The artefact built, but no GPU can run it here (no driver, no device):
/// the reason Lamina's CUDA runtime gives.
class NoUsableGpuError : public llvm::ErrorInfo<NoUsableGpuError> {
public:
  explicit NoUsableGpuError(std::string reason) : reason(std::move(reason)) {}
  void log(llvm::raw_ostream &os) const override {
    os << "no usable GPU: " << reason;
  }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  static char ID;

private:
  std::string reason;
};

class CudaTarget : public ProgramTarget {
public:
  explicit CudaTarget(GpuArtefactOptions options = {})
      : options(std::move(options)) {}

  llvm::StringRef getName() const override { return "cuda"; }
  llvm::Error lower(ModuleOp module, TimingScope &timing) const override;
  /// Links and loads the artefact; a NoUsableGpuError when no GPU is
  /// usable.
  llvm::Expected<std::unique_ptr<Executable>>
  build(ModuleOp module, llvm::ArrayRef<std::string> functions,
        bool keepObject, TimingScope &timing) const override;

private:
  GpuArtefactOptions options;
};

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_CUDATARGET_H
