//===- InitAll.cpp - Register everything Lamina provides ------------------===//

#include "lamina/InitAll.h"

#include "lamina/Codegen/Passes.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaLayoutInterface.h"
#include "lamina/Lamina/TransformOps/LaminaTransformOps.h"
#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Lns/Transforms/Passes.h"
#include "lamina/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::lamina::registerAllDialects(DialectRegistry &registry) {
  registry.insert<LaminaDialect, lns::LnsDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registerTransformDialectExtension(registry);
  registerReverseDifferentiationModels(registry);
  registerLayoutModels(registry);
  // gpu-module-to-binary translates kernels to LLVM IR in-process.
  mlir::registerAllToLLVMIRTranslations(registry);
}

void mlir::lamina::registerAllPasses() {
  mlir::registerAllPasses();
  registerLaminaPasses();
  lns::registerLnsPasses();
  registerLaminaConversionPasses();
  registerLaminaCodegenPasses();
  registerLaminaPipelines();
}
