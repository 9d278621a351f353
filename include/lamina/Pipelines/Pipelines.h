//===- Pipelines.h - Lamina's end-to-end compilation pipelines --*- C++ -*-===//
//
// Named pipelines registered in lamina-opt and used by lamina-run and the
// Python package, so that every entry point compiles alike.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_PIPELINES_PIPELINES_H
#define LAMINA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace lamina {

struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<bool> fuseEpilogues{
      *this, "fuse-epilogues",
      llvm::cl::desc("fuse bias, activation and dropout into the matmul "
                     "tile (false: separate loop nests, for comparison)"),
      llvm::cl::init(true)};
  Option<unsigned> threads{*this, "threads",
                           llvm::cl::desc("threads sharing the cache-level "
                                          "tiles of each matmul (OpenMP)"),
                           llvm::cl::init(1)};
};

/// lamina (+ upstream tensor IR) → LLVM dialect for the host CPU: epilogue
/// fusion, lowering to linalg, vectorized math, bufferization with results
/// as out-parameters, LLVM.
void buildLaminaCpuPipeline(OpPassManager &pm,
                            const CpuPipelineOptions &options);

/// Registers `lamina-cpu-pipeline`.
void registerLaminaPipelines();

} // namespace lamina
} // namespace mlir

#endif // LAMINA_PIPELINES_PIPELINES_H
