//===- GpuNativeMath.cpp - math ops PTX implements, as native ops ---------===//

#include "lamina/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAGPUNATIVEMATH
#include "lamina/Conversion/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
/// `MathOp` → the LLVM intrinsic `IntrinsicOp` on the same operands.
template <typename MathOp, typename IntrinsicOp>
struct ToIntrinsic : OpRewritePattern<MathOp> {
  using OpRewritePattern<MathOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<IntrinsicOp>(op, op.getType(),
                                             op->getOperands());
    return success();
  }
};

/// |x| as the sign bit cleared: exact, and legal through convert-gpu-to-nvvm
/// (which admits llvm.intr.fma but not llvm.intr.fabs).
struct AbsFToBitMask : OpRewritePattern<math::AbsFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AbsFOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    Type elt = getElementTypeOrSelf(type);
    unsigned width = elt.getIntOrFloatBitWidth();
    Type bits = rewriter.getIntegerType(width);
    if (auto vector = dyn_cast<VectorType>(type))
      bits = vector.clone(bits);
    Location loc = op.getLoc();
    Value raw = arith::BitcastOp::create(rewriter, loc, bits, op.getOperand());
    Value mask = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getIntegerAttr(getElementTypeOrSelf(bits),
                                APInt::getSignedMaxValue(width)));
    if (auto vector = dyn_cast<VectorType>(bits))
      mask = vector::BroadcastOp::create(rewriter, loc, vector, mask);
    Value cleared = arith::AndIOp::create(rewriter, loc, raw, mask);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, type, cleared);
    return success();
  }
};

struct LaminaGpuNativeMathPass
    : lamina::impl::LaminaGpuNativeMathBase<LaminaGpuNativeMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ToIntrinsic<math::FmaOp, LLVM::FMAOp>, AbsFToBitMask>(
        &getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};
} // namespace
