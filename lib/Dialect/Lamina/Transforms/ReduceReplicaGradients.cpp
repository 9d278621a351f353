//===- ReduceReplicaGradients.cpp - Gradients reduced over replicas -------===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAREDUCEREPLICAGRADIENTS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaReduceReplicaGradientsPass
    : mlir::lamina::impl::LaminaReduceReplicaGradientsBase<
          LaminaReduceReplicaGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    auto function =
        getOperation().lookupSymbol<func::FuncOp>(this->function.getValue());
    if (!function || function.isExternal()) {
      getOperation().emitError("lamina-reduce-replica-gradients: no function "
                               "@")
          << this->function.getValue() << " with a body";
      return signalPassFailure();
    }
    Operation *terminator = function.getBody().back().getTerminator();
    if (!roots.empty() && roots.size() != results.size()) {
      function.emitError("lamina-reduce-replica-gradients takes one root per "
                         "result (")
          << results.size() << " results, " << roots.size() << " roots)";
      return signalPassFailure();
    }
    // One reduction per value and root, however many results return it.
    DenseMap<std::pair<Value, int64_t>, Value> reduced;
    for (auto [position, index] : llvm::enumerate(results)) {
      int64_t root = roots.empty() ? -1 : roots[position];
      if (index < 0 || index >= int64_t(terminator->getNumOperands())) {
        function.emitError("has no result ")
            << index << " to reduce over replicas";
        return signalPassFailure();
      }
      Value gradient = terminator->getOperand(index);
      auto type = dyn_cast<RankedTensorType>(gradient.getType());
      if (!type || !isa<FloatType>(type.getElementType())) {
        function.emitError("result ")
            << index << " is " << gradient.getType()
            << "; only float tensors are reduced over replicas (an LNS "
               "gradient's sum is an LNS addition)";
        return signalPassFailure();
      }
      Value &sum = reduced[{gradient, root}];
      if (!sum) {
        OpBuilder b(function.getContext());
        if (!overlap)
          b.setInsertionPoint(terminator);
        else if (Operation *producer = gradient.getDefiningOp())
          b.setInsertionPointAfter(producer);
        else
          b.setInsertionPointToStart(&function.getBody().front());
        sum = ReduceReplicasOp::create(
            b, gradient.getLoc(), gradient, mean,
            root < 0 ? IntegerAttr() : b.getI64IntegerAttr(root));
      }
      terminator->setOperand(index, sum);
    }
  }
};
} // namespace
