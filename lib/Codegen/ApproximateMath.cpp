//===- ApproximateMath.cpp - Polynomial tanh, erf and exp -----------------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAAPPROXIMATEMATH
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
struct LaminaApproximateMathPass
    : mlir::lamina::impl::LaminaApproximateMathBase<
          LaminaApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    auto approximated = [](StringRef name) {
      return name == math::TanhOp::getOperationName() ||
             name == math::ErfOp::getOperationName() ||
             name == math::ExpOp::getOperationName();
    };
    populateMathF32ExpansionPatterns(patterns, approximated);
    populateMathPolynomialApproximationPatterns(patterns, approximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
