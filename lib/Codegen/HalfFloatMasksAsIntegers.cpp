//===- HalfFloatMasksAsIntegers.cpp - Masked 16-bit float memory as i16 ---===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAHALFFLOATMASKSASINTEGERS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

/// `type` with i16 elements if it is a vector of 16-bit floats, else null.
static VectorType asIntegers(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  auto element =
      vector ? dyn_cast<FloatType>(vector.getElementType()) : FloatType();
  if (!element || element.getWidth() != 16)
    return {};
  return vector.clone(IntegerType::get(type.getContext(), 16));
}

namespace {
struct LaminaHalfFloatMasksAsIntegersPass
    : mlir::lamina::impl::LaminaHalfFloatMasksAsIntegersBase<
          LaminaHalfFloatMasksAsIntegersPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      OpBuilder builder(op);
      Location loc = op->getLoc();
      if (auto store = dyn_cast<LLVM::MaskedStoreOp>(op)) {
        if (VectorType bits = asIntegers(store.getValue().getType()))
          store.getValueMutable().assign(
              LLVM::BitcastOp::create(builder, loc, bits, store.getValue()));
        return;
      }
      auto load = dyn_cast<LLVM::MaskedLoadOp>(op);
      VectorType bits = load ? asIntegers(load.getType()) : VectorType();
      if (!bits)
        return;
      SmallVector<Value> operands(load->getOperands());
      // The pass-through values (the lanes the mask leaves) as bits too.
      for (Value &operand : llvm::drop_begin(operands, 2))
        operand = LLVM::BitcastOp::create(builder, loc, bits, operand);
      OperationState state(loc, load->getName(), operands, {bits},
                           load->getAttrs());
      Operation *integers = builder.create(state);
      Value floats = LLVM::BitcastOp::create(builder, loc, load.getType(),
                                             integers->getResult(0));
      load.getResult().replaceAllUsesWith(floats);
      load->erase();
    });
  }
};
} // namespace
