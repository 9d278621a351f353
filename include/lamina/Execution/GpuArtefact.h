//===- GpuArtefact.h - Ahead-of-time GPU shared libraries -------*- C++ -*-===//
//
// What lamina-compile and `lamina-run --target=cuda` build: a module compiled
// with lamina-gpu-pipeline into a shared library that needs only the CUDA
// driver at run time (kernels as fatbins of cubin + PTX, host code, Lamina's
// CUDA runtime, libstdc++ linked statically).
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_GPUARTEFACT_H
#define LAMINA_EXECUTION_GPUARTEFACT_H

#include "lamina/Conversion/LaminaToGPU/GpuChips.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <string>

namespace mlir::lamina {

struct GpuArtefactOptions {
  std::string chip = kDefaultGpuChip.str();
  std::string features = "+ptx80";
  std::string lnsSbdb = "ideal";
  /// CUDA toolkit with ptxas and fatbinary (empty: findCudaToolkit).
  std::string cudaPath;
  /// Also write the kernels' PTX here (empty: no).
  std::string ptxPath;
  /// Lamina's CUDA runtime archive and the C++ driver that links (empty:
  /// the compiler Lamina was built with).
  std::string runtimeArchive;
  std::string linker;
};

/// The runtime archive of this build of Lamina.
std::string getDefaultCudaRuntimeArchive();

/// The C++ compiler this build of Lamina was built with, which links
/// artefacts by default (Lamina's dependencies include it; `c++` need not
/// exist).
std::string getDefaultLinker();

/// Compiles `module` (lamina IR, modified in place) into the shared library
/// `libraryPath`. Every function is exported as `<name>`,
/// `_mlir_ciface_<name>` and `_mlir_<name>` (one `void **` argument: the
/// addresses of the C-interface arguments, as in MLIR's ExecutionEngine).
/// Diagnostics of the pipeline go to the context's handler.
llvm::Error buildGpuArtefact(ModuleOp module, const GpuArtefactOptions &options,
                             llvm::StringRef libraryPath);

/// The two steps of buildGpuArtefact: lamina-gpu-pipeline on `module`
/// (kernels as PTX, written to `options.ptxPath` if set), then the kernels
/// packed into fatbins, the host code compiled and linked into
/// `libraryPath`.
llvm::Error lowerGpuArtefact(ModuleOp module, const GpuArtefactOptions &options);
llvm::Error linkGpuArtefact(ModuleOp module, const GpuArtefactOptions &options,
                            llvm::StringRef libraryPath);

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_GPUARTEFACT_H
