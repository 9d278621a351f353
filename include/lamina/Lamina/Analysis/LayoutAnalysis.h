//===- LayoutAnalysis.h - R / S(axis) / P layouts of values -----*- C++ -*-===//
//
// The layout inference of the spec's §2–3: starting from the layouts
// declared on function arguments, every value of a sharded program gets a
// layout, and what the spec calls an error (partial sums reaching a bias,
// a sync on the wrong layout, ...) is reported on the offending op.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_ANALYSIS_LAYOUTANALYSIS_H
#define LAMINA_LAMINA_ANALYSIS_LAYOUTANALYSIS_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::lamina {

/// The layout of every value in `function` (values absent from the map are
/// replicated), or failure after emitting the first error.
FailureOr<llvm::DenseMap<Value, LayoutAttr>>
inferLayouts(func::FuncOp function);

/// The layouts of every function defined in `module`, inferred before any
/// is used (a pass rejecting one function leaves them all as they were).
using FunctionLayouts =
    SmallVector<std::pair<func::FuncOp, llvm::DenseMap<Value, LayoutAttr>>>;
FailureOr<FunctionLayouts> inferLayouts(ModuleOp module);

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_ANALYSIS_LAYOUTANALYSIS_H
