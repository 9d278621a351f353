//===- LaminaTestDialect.cpp - Ops for tests of Lamina's interfaces -------===//
//
// `lamina_test.scale` gets its layouts, gradient layouts and partition from
// one external model, the way a new op of any dialect joins sharded
// programs; `lamina_test.unmodelled_scale` has none and is element-wise.
//
//===----------------------------------------------------------------------===//

#include "LaminaTestDialect.h"

#include "lamina/Lamina/IR/LaminaLayoutInterface.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::test;

#include "LaminaTestDialect.cpp.inc"

#define GET_OP_CLASSES
#include "LaminaTestOps.cpp.inc"

void LaminaTestDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "LaminaTestOps.cpp.inc"
      >();
}

namespace {
/// A linear map: results take the operand's layout, whatever it is;
/// gradients flow back unchanged; a rank scales its block (the interface's
/// default partition).
struct ScaleLayoutRules
    : LayoutOpInterface::ExternalModel<ScaleLayoutRules, ScaleOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    return state.getLayout(cast<ScaleOp>(op).getInput());
  }
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto scale = cast<ScaleOp>(op);
    return state.addGradient(op, scale.getInput(),
                             state.getGradient(scale.getResult()));
  }
};
} // namespace

void mlir::lamina::test::registerLaminaTestDialect(DialectRegistry &registry) {
  registry.insert<LaminaTestDialect>();
  registry.addExtension(+[](MLIRContext *context, LaminaTestDialect *) {
    ScaleOp::attachInterface<ScaleLayoutRules>(*context);
  });
}
