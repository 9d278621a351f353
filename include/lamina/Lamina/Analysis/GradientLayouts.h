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
/// biases of layer ops and of their matmul and bias_add pieces, also in the
/// functions it calls): their gradients may be partial sums, which are
/// all-reduced as parameter gradients.
llvm::SmallPtrSet<Value, 8> getLayerParameters(func::FuncOp function);

/// An all_gather sync written without tensor_parallel_output_grad, on `op`
/// (a lamina.sync, or the layer holding it), and the sync with the choice
/// its gradient's layout makes: reduce-scatter a partial gradient, keep
/// this rank's block of a whole one.
struct DerivedSync {
  Operation *op;
  SyncAttr resolved;
};

/// The layout on grid axis `axis` of the gradient of every value of
/// `function` that receives one, given the forward layouts `layouts` on that
/// axis of it and the functions it calls (from inferLayouts), or failure
/// after reporting the first gradient the backward would leave wrong. The
/// choices made for all_gather syncs that leave them open go to `derived`.
/// The arguments numbered in `constants` get no gradient (inputs that do
/// not require one): a partial gradient reaching them is no error.
FailureOr<llvm::DenseMap<Value, LayoutAttr>>
inferGradientLayouts(func::FuncOp function,
                     const llvm::DenseMap<Value, LayoutAttr> &layouts,
                     SmallVectorImpl<DerivedSync> *derived = nullptr,
                     ArrayRef<int64_t> constants = {},
                     StringRef axis = LaminaDialect::kTensorAxisName);

/// Writes the choices into the program, so that the collectives
/// partitioning makes of these syncs transpose as decided.
void applyDerivedSyncs(ArrayRef<DerivedSync> derived);

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_ANALYSIS_GRADIENTLAYOUTS_H
