//===- MaterializeLazyWeights.cpp - Static in_features for lazy layers ----===//

#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAMATERIALIZELAZYWEIGHTS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaMaterializeLazyWeightsPass
    : mlir::lamina::impl::LaminaMaterializeLazyWeightsBase<
          LaminaMaterializeLazyWeightsPass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isDeclaration())
        continue;
      // The input width each lazy weight argument is used with.
      llvm::DenseMap<BlockArgument, std::pair<int64_t, Operation *>> widths;
      WalkResult result = function.walk([&](LinearLayerOpInterface op) {
        LinearLayerParts parts = op.getLayerParts();
        auto weight = dyn_cast<BlockArgument>(parts.weight);
        auto weightType = cast<RankedTensorType>(parts.weight.getType());
        if (!weight || !weightType.isDynamicDim(1))
          return WalkResult::advance();
        int64_t width =
            cast<RankedTensorType>(parts.input.getType()).getShape().back();
        if (ShapedType::isDynamic(width)) {
          op->emitOpError("has a lazy weight but an input of unknown width; "
                          "the first input must fix in_features");
          return WalkResult::interrupt();
        }
        auto [it, inserted] = widths.try_emplace(weight, width, op);
        if (!inserted && it->second.first != width) {
          InFlightDiagnostic diag =
              op->emitOpError("uses a lazy weight with inputs of width ")
              << width << ", but it was materialized with in_features "
              << it->second.first;
          diag.attachNote(it->second.second->getLoc())
              << "first input of width " << it->second.first << " here";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (result.wasInterrupted())
        return signalPassFailure();
      if (widths.empty())
        continue;
      for (auto [argument, width] : widths) {
        auto type = cast<RankedTensorType>(argument.getType());
        argument.setType(
            RankedTensorType::get({type.getDimSize(0), width.first},
                                  type.getElementType()));
      }
      function.setFunctionType(FunctionType::get(
          &getContext(), function.getBody().front().getArgumentTypes(),
          function.getResultTypes()));
    }
  }
};
} // namespace
