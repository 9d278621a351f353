//===- Decompose.cpp - Expand the composite lns ops -----------------------===//

#include "lamina/Lns/Transforms/Decompositions.h"
#include "lamina/Lns/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::lamina::lns {
#define GEN_PASS_DEF_LAMINALNSDECOMPOSE
#include "lamina/Lns/Transforms/Passes.h.inc"
} // namespace mlir::lamina::lns

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::lns;

namespace {
struct LaminaLnsDecomposePass
    : lns::impl::LaminaLnsDecomposeBase<LaminaLnsDecomposePass> {
  void runOnOperation() override {
    SmallVector<Operation *> composites;
    getOperation()->walk([&](Operation *op) {
      if (isa<SoftmaxOp, LogSoftmaxOp, NllLossOp, NllLossGradOp, Conv2DOp>(op))
        composites.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : composites) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      Value expanded =
          TypeSwitch<Operation *, Value>(op)
              .Case([&](SoftmaxOp softmax) {
                return buildSoftmax(rewriter, loc, softmax.getInput(),
                                    softmax.getDim());
              })
              .Case([&](LogSoftmaxOp logSoftmax) {
                return buildLogSoftmax(rewriter, loc, logSoftmax.getInput(),
                                       logSoftmax.getDim());
              })
              .Case([&](NllLossOp nll) {
                return buildNllLoss(rewriter, loc, nll);
              })
              .Case([&](NllLossGradOp nllGrad) {
                return buildNllLossGrad(rewriter, loc, nllGrad);
              })
              .Case([&](Conv2DOp conv) {
                return buildConv2D(rewriter, loc, conv.getInput(),
                                   conv.getWeight(), conv.getBias(),
                                   conv.getType(), Conv2DGeometry::of(conv));
              });
      rewriter.replaceOp(op, expanded);
    }
  }
};
} // namespace
