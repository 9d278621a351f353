//===- HostPreparePipeline.cpp - lamina-host-prepare ----------------------===//

#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Pipelines/Pipelines.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

void mlir::lamina::buildLaminaHostPreparePipeline(OpPassManager &pm) {
  pm.addPass(createLaminaInlineBlocks());
  pm.addPass(createLaminaMaterializeLazyWeights());
  pm.addPass(createLaminaSplitPipelineStages());
  pm.addPass(createLaminaRecordResultLayouts());
}

