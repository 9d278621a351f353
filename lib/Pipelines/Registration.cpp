//===- Registration.cpp - Lamina's named pipelines ------------------------===//

#include "lamina/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::lamina::registerLaminaPipelines() {
  PassPipelineRegistration<>(
      kHostPreparePipeline,
      "Prepare a module for the host: lazy weights materialized, pipeline "
      "stages split, sharded results recorded on the signature",
      buildLaminaHostPreparePipeline);
  PassPipelineRegistration<CpuPipelineOptions>(
      "lamina-cpu-pipeline",
      "Compile lamina IR to LLVM for the host CPU (fusion, linalg, "
      "bufferization with out-parameters, LLVM)",
      buildLaminaCpuPipeline);
  PassPipelineRegistration<GpuPipelineOptions>(
      "lamina-gpu-pipeline",
      "Compile lamina IR for NVIDIA GPUs (tensor-core fused linear kernels, "
      "LNS kernels, NVVM, PTX/cubin) with host code on device buffers",
      buildLaminaGpuPipeline);
}
