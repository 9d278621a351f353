//===- GradientRules.h - Gradient layouts shared by several ops -*- C++ -*-===//
//
// The transposed layout rules that more than one op's model states: the
// matmul x·Wᵀ (a layer, its decomposed matmul, a fused QKV projection), the
// backward collective of a sync (a lamina.sync, a layer's sync), the sum
// over rows that gives a bias or norm parameter its gradient, and a whole
// linear layer composed of them. Each reports on the op what the backward
// would get wrong, naming the layer.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_ANALYSIS_GRADIENTRULES_H
#define LAMINA_LAMINA_ANALYSIS_GRADIENTRULES_H

#include "lamina/Lamina/IR/LaminaLayoutInterface.h"

namespace mlir::lamina::layout {

/// "layer 'path'", or "an unnamed layer".
std::string describeLayer(StringRef path);

/// The gradient layouts of x and W in `x·Wᵀ` (layer `path`, x of rank
/// `rank`) for their forward layouts and the layout of dy.
struct MatmulGradients {
  GradientLayout input, weight;
};
FailureOr<MatmulGradients> matmulGradients(Operation *op, StringRef path,
                                           LayoutAttr x, LayoutAttr w,
                                           const GradientLayout &dy,
                                           int64_t rank);

/// The gradient of the value a sync `spec` (of layer `path`) acts on, from
/// the gradient `dy` of the value it produces: its backward collective
/// applied (syncBackward). An all_gather that leaves its transpose open
/// takes the one dy needs, recorded with `state.deriveSync`.
FailureOr<GradientLayout> syncGradient(Operation *op, StringRef path,
                                       SyncAttr spec,
                                       const GradientLayout &dy,
                                       GradientLayoutState &state);

/// The gradient of a parameter broadcast over the rows of a value of rank
/// `rank` (a bias): Σ over rows of dy.
GradientLayout rowsSumGradient(MLIRContext *context, const GradientLayout &dy,
                               int64_t rank, StringRef path);

/// The gradients of a linear layer's input, weight and bias, its epilogue
/// and sync transposed in reverse order.
LogicalResult linearLayerGradients(LinearLayerOpInterface layer,
                                   GradientLayoutState &state);

} // namespace mlir::lamina::layout

#endif // LAMINA_LAMINA_ANALYSIS_GRADIENTRULES_H
