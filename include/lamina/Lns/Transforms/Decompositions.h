//===- Decompositions.h - Composite lns ops as simpler ops ------*- C++ -*-===//
//
// The expansions of softmax, log_softmax, nll_loss and conv2d into lns
// arithmetic, linalg and tensor ops, in the reference's order of additions.
// lns-decompose applies them to the forward ops; the reverse-mode rules of
// those ops build their gradients from the same pieces.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LNS_TRANSFORMS_DECOMPOSITIONS_H
#define LAMINA_LNS_TRANSFORMS_DECOMPOSITIONS_H

#include "lamina/Lns/IR/Lns.h"

#include "mlir/IR/Builders.h"

namespace mlir::lamina::lns {

/// The sequential sum of `x` over `dim`, broadcast back to x's shape.
Value buildSumKeepDim(OpBuilder &b, Location loc, Value x, int64_t dim);

Value buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim);
Value buildLogSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim);

Value buildNllLoss(OpBuilder &b, Location loc, NllLossOp op);
Value buildNllLossGrad(OpBuilder &b, Location loc, NllLossGradOp op);

/// The geometry of a conv2d: strides, dilations and Z padding per spatial
/// dimension.
struct Conv2DGeometry {
  SmallVector<int64_t, 2> strides, dilations, padLow, padHigh;
  static Conv2DGeometry of(Conv2DOp op);
};

/// The conv2d of `resultType` [N, F, OH, OW] (the verifier's output shape).
Value buildConv2D(OpBuilder &b, Location loc, Value input, Value weight,
                  Value bias, RankedTensorType resultType,
                  const Conv2DGeometry &geometry);
/// The gradient of conv2d's input [N, C, H, W] from the output's `grad`:
/// each input position sums over the filters, then the kernel offsets.
Value buildConv2DInputGrad(OpBuilder &b, Location loc, Value grad,
                           Value weight, RankedTensorType inputType,
                           const Conv2DGeometry &geometry);
/// The gradient of conv2d's weight: each element sums over the batch, then
/// the output positions.
Value buildConv2DWeightGrad(OpBuilder &b, Location loc, Value grad,
                            Value input, RankedTensorType weightType,
                            const Conv2DGeometry &geometry);

} // namespace mlir::lamina::lns

#endif // LAMINA_LNS_TRANSFORMS_DECOMPOSITIONS_H
