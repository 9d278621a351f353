//===- ApplySchedule.cpp - Apply a schedule file to the module -----------===//

#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Support/TransformScript.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAAPPLYSCHEDULE
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaApplySchedulePass
    : mlir::lamina::impl::LaminaApplyScheduleBase<LaminaApplySchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (schedule.empty()) {
      module.emitError("lamina-apply-schedule needs schedule=<file>");
      return signalPassFailure();
    }
    if (failed(applyScheduleFile(module, schedule)))
      signalPassFailure();
  }
};
} // namespace
