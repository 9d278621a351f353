//===- GradientLayouts.h - Layouts of the backward pass ---------*- C++ -*-===//
//
// The layouts gradients take when a sharded program is differentiated, found
// by walking the forward program in reverse with the transposed layout rules:
// a column-parallel matmul turns its output gradient S(last) into a partial
// (P) input gradient, a row-parallel one turns a replicated output gradient
// into S(last), each sync applies its backward collective
// (layout::syncBackward). A partial gradient must be all-reduced before it
// meets a whole one or reaches a program input — the all-reduce Slapo's
// `sync("bwd_post", "all_reduce")` places; parameters replicated across
// ranks may receive partial gradients (they are all-reduced as parameter
// gradients). What the backward would get wrong is reported on the op,
// naming the layer, the value and the missing sync.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_ANALYSIS_GRADIENTLAYOUTS_H
#define LAMINA_LAMINA_ANALYSIS_GRADIENTLAYOUTS_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::lamina {

/// The arguments of `function` that are layer parameters (weights and
/// biases of layer ops and of their matmul and bias_add pieces): their
/// gradients may be partial sums, which are all-reduced as parameter
/// gradients.
llvm::SmallPtrSet<Value, 8> getLayerParameters(func::FuncOp function);

/// The layout of the gradient of every value of `function` that receives
/// one, given the forward layouts `layouts` (from inferLayouts), or failure
/// after reporting the first gradient the backward would leave wrong.
FailureOr<llvm::DenseMap<Value, LayoutAttr>>
inferGradientLayouts(func::FuncOp function,
                     const llvm::DenseMap<Value, LayoutAttr> &layouts);

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_ANALYSIS_GRADIENTLAYOUTS_H
