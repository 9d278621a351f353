//===- RecordModulePaths.cpp - Module paths as attributes -----------------===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINARECORDMODULEPATHS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
struct LaminaRecordModulePathsPass
    : mlir::lamina::impl::LaminaRecordModulePathsBase<
          LaminaRecordModulePathsPass> {
  void runOnOperation() override { lamina::recordModulePaths(getOperation()); }
};
} // namespace
