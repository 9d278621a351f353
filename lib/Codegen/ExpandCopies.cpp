//===- ExpandCopies.cpp - memref.copy as linalg.copy ----------------------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAEXPANDCOPIES
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
struct LaminaExpandCopiesPass
    : mlir::lamina::impl::LaminaExpandCopiesBase<LaminaExpandCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};
} // namespace
