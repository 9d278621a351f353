//===- DecomposeAggregates.cpp - Decompose aggregated linalg ops ----------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINADECOMPOSEAGGREGATES
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
struct LaminaDecomposeAggregatesPass
    : mlir::lamina::impl::LaminaDecomposeAggregatesBase<
          LaminaDecomposeAggregatesPass> {
  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> aggregates;
    getOperation()->walk(
        [&](linalg::AggregatedOpInterface op) { aggregates.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::AggregatedOpInterface op : aggregates) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> results =
          op.decomposeOperation(rewriter);
      if (failed(results)) {
        op->emitError("could not decompose this aggregated op");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *results);
    }
    // Packs (of weights, in the packing function) become pad + reshape +
    // transpose, which bufferize and vectorize like any other op.
    SmallVector<linalg::PackOp> packs;
    getOperation()->walk([&](linalg::PackOp op) { packs.push_back(op); });
    for (linalg::PackOp pack : packs) {
      rewriter.setInsertionPoint(pack);
      if (failed(linalg::lowerPack(rewriter, pack))) {
        pack->emitError("could not lower this pack");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
