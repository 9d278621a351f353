//===- LinalgLayoutModels.cpp - Layout rules of linalg ops ----------------===//
//
// The linalg ops of attention between layers: transposes move the sharded
// axis with its dim; batch matmuls keep a sharded batch (the heads).
//
//===----------------------------------------------------------------------===//

#include "LayoutModels.h"

#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

using namespace mlir::lamina::detail;

namespace {
/// Results at the per-rank shapes of their layouts, inits rebuilt there.
LogicalResult partitionDestinationStyle(Operation *op, PartitionState &state) {
  if (failed(state.localizeInits(cast<DestinationStyleOpInterface>(op))))
    return failure();
  for (OpResult result : op->getResults())
    result.setType(
        state.getLocalType(result.getType(), state.getLayout(result)));
  return success();
}

struct TransposeRules : Rules<TransposeRules, linalg::TransposeOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    return transposeLayout(state.getLayout(transpose.getInput()),
                           transpose.getPermutation());
  }
  /// The inverse permutation; partial sums stay partial.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    GradientLayout dy = state.getGradient(op->getResult(0));
    ArrayRef<int64_t> permutation = transpose.getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, source] : llvm::enumerate(permutation))
      inverse[source] = i;
    LayoutOrError dx = transposeLayout(dy.layout, inverse);
    if (dx.failed())
      return isPartial(dy.layout)
                 ? state.addGradient(op, transpose.getInput(), dy)
                 : op->emitOpError(dx.getReason());
    return state.addGradient(op, transpose.getInput(), {dx.get(), dy.origin});
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    return partitionDestinationStyle(op, state);
  }
};

struct BatchMatmulRules : Rules<BatchMatmulRules, linalg::BatchMatmulOp> {
  LayoutOrError inferResultLayout(Operation *op, LayoutState &state) const {
    auto matmul = cast<linalg::BatchMatmulOp>(op);
    if (matmul.getNumDpsInputs() != 2 || matmul.hasUserDefinedMaps())
      return otherOpLayout(op, state);
    return batchMatmulLayout(state.getLayout(matmul.getDpsInputs()[0]),
                             state.getLayout(matmul.getDpsInputs()[1]));
  }
  /// dA = dC·Bᵀ and dB = Aᵀ·dC per batch: the batch's layout.
  LogicalResult inferOperandGradientLayouts(Operation *op,
                                            GradientLayoutState &state) const {
    auto matmul = cast<linalg::BatchMatmulOp>(op);
    GradientLayout dy = state.getGradient(op->getResult(0));
    for (Value input : matmul.getDpsInputs())
      if (failed(state.addGradient(op, input, dy)))
        return failure();
    return success();
  }
  LogicalResult partition(Operation *op, PartitionState &state) const {
    return partitionDestinationStyle(op, state);
  }
};
} // namespace

void mlir::lamina::detail::registerLinalgLayoutModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::TransposeOp::attachInterface<TransposeRules>(*context);
    linalg::BatchMatmulOp::attachInterface<BatchMatmulRules>(*context);
  });
}
