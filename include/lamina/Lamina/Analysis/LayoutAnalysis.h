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
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::lamina {

/// The layout on grid axis `axis` of every value in `function` and in the
/// functions it calls (values absent from the map are replicated), or
/// failure after emitting the first error. On a grid of several axes, the
/// error names the axis. A called function's layouts follow from those its
/// calls pass, which must be the same at every call: it is partitioned once.
FailureOr<llvm::DenseMap<Value, LayoutAttr>>
inferLayouts(func::FuncOp function,
             StringRef axis = LaminaDialect::kTensorAxisName);

/// The layouts on `axis` of every function defined in `module`, inferred
/// before any is used (a pass rejecting one function leaves them all as
/// they were). Functions the module calls take theirs from their calls
/// (each map holds its own function's values).
using FunctionLayouts =
    SmallVector<std::pair<func::FuncOp, llvm::DenseMap<Value, LayoutAttr>>>;
FailureOr<FunctionLayouts>
inferLayouts(ModuleOp module, StringRef axis = LaminaDialect::kTensorAxisName);

/// The layouts of every function of `module` on each axis of its grid
/// (the tensor axis alone without `lamina.grid`), or failure after the first
/// error: a rule rejecting its operands on some axis, or an op whose result
/// would have one dim sharded on two axes.
using GridLayouts = SmallVector<std::pair<StringAttr, FunctionLayouts>>;
FailureOr<GridLayouts> inferGridLayouts(ModuleOp module);

/// The functions of `module` that its functions call.
llvm::SmallPtrSet<Operation *, 8> getCalledFunctions(ModuleOp module);

/// The function `call` calls when the module defines it (its layouts
/// follow from the call's), else null.
func::FuncOp getDefinedCallee(func::CallOp call);

/// The layouts of `function` on each axis of `layouts`.
using LayoutsPerAxis = SmallVector<
    std::pair<StringAttr, const llvm::DenseMap<Value, LayoutAttr> *>>;
LayoutsPerAxis getFunctionLayoutsPerAxis(const GridLayouts &layouts,
                                         func::FuncOp function);

/// While alive, errors emitted on the ops of a module whose grid has several
/// axes end by naming the axis `axis` whose rules rejected them.
class NameGridAxisInErrors {
public:
  NameGridAxisInErrors(Operation *op, StringRef axis);
  ~NameGridAxisInErrors();

private:
  MLIRContext *context;
  std::optional<DiagnosticEngine::HandlerID> handler;
};

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_ANALYSIS_LAYOUTANALYSIS_H
