//===- DistinctResults.cpp - One tensor per returned result ---------------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINADISTINCTRESULTS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
struct LaminaDistinctResultsPass
    : mlir::lamina::impl::LaminaDistinctResultsBase<
          LaminaDistinctResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 8> seen;
      OpBuilder builder(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (!type || seen.insert(value).second)
          continue;
        auto copy = bufferization::AllocTensorOp::create(
            builder, ret.getLoc(), type, /*dynamicSizes=*/ValueRange(),
            /*copy=*/value, /*sizeHint=*/Value(),
            /*memorySpace=*/Attribute());
        operand.set(copy);
      }
    });
  }
};
} // namespace
