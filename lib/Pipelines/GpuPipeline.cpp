//===- GpuPipeline.cpp - lamina-gpu-pipeline ------------------------------===//

#include "lamina/Codegen/Passes.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"

using namespace mlir;

std::string mlir::lamina::findCudaToolkit(StringRef option) {
  if (option == "none")
    return "";
  if (!option.empty())
    return option.str();
  if (StringRef found = NVVM::getCUDAToolkitPath(); !found.empty())
    return found.str();
  if (llvm::sys::fs::is_directory("/usr/local/cuda"))
    return "/usr/local/cuda";
  return "";
}

void mlir::lamina::buildLaminaGpuPipeline(OpPassManager &pm,
                                          const GpuPipelineOptions &options) {
  // Layers → fused linear ops → one kernel each, on device buffers.
  pm.addPass(createLaminaDecompose());
  pm.addPass(createLaminaFuseEpilogues());
  // A backward transposes an input once however many layers read it.
  pm.addPass(createCSEPass());
  ConvertLaminaToGPUOptions toGpu;
  toGpu.chip = options.chip;
  toGpu.lnsSbdb = options.lnsSbdb;
  pm.addPass(createConvertLaminaToGPU(toGpu));

  // Upstream's NVVM lowering (the steps of --gpu-lower-to-nvvm-pipeline),
  // with Lamina's kernel attributes set right after outlining. Nothing
  // folds before outlining: gpu.launch is not isolated from above, so
  // constants would be hoisted out and become kernel parameters.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createLaminaGpuKernelAttributes());
  // The CPU path's tanh/erf polynomials: no libdevice for GELU.
  pm.addPass(createLaminaApproximateMath());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLaminaGpuNativeMath());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = lamina::findCudaToolkit(options.cudaPath);
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
