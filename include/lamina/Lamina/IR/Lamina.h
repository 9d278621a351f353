//===- Lamina.h - The lamina dialect ----------------------------*- C++ -*-===//
//
// Linear layers (the Slapo family), their primitive pieces, sync points and
// distributed layouts.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_IR_LAMINA_H
#define LAMINA_LAMINA_IR_LAMINA_H

#include "lamina/Lns/IR/Lns.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lamina/Lamina/IR/LaminaOpsDialect.h.inc"

#include "lamina/Lamina/IR/LaminaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "lamina/Lamina/IR/LaminaAttrs.h.inc"

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"
#include "lamina/Lamina/IR/LaminaInterfaces.h"

#define GET_OP_CLASSES
#include "lamina/Lamina/IR/LaminaOps.h.inc"

namespace mlir {
class FunctionOpInterface;
} // namespace mlir

namespace mlir::lamina {

/// The world size declared by the module holding `op` (`lamina.world_size`,
/// else the product of `lamina.grid`'s sizes).
std::optional<int64_t> getWorldSize(Operation *op);

/// One axis of a device grid.
struct GridAxis {
  StringAttr name;
  int64_t size;
};

/// The device grid of the module holding `op`: the axes of `lamina.grid`
/// (sorted by name), else the one axis `tp` of `lamina.world_size` ranks;
/// empty where the module declares neither.
SmallVector<GridAxis> getGridAxes(Operation *op);

/// The number of ranks along grid axis `axis` of the module holding `op`;
/// none where the grid lacks the axis.
std::optional<int64_t> getGridAxisSize(Operation *op, StringRef axis);

/// The layout `layout` (a LayoutAttr or GridLayoutAttr) gives a value on
/// grid axis `axis`; null for anything else.
LayoutAttr getLayoutOnAxis(Attribute layout, StringRef axis);

/// The axes `layout` (a LayoutAttr or GridLayoutAttr) names and its layout
/// on each; empty for anything else.
SmallVector<std::pair<StringAttr, LayoutAttr>>
getLayoutsPerAxis(Attribute layout);

/// A value's layout over a grid from its layout on each axis, in the
/// canonical spelling: a LayoutAttr where no axis but `tp` is named, else a
/// GridLayoutAttr of the axes not replicated.
Attribute composeLayouts(MLIRContext *context,
                         ArrayRef<std::pair<StringAttr, LayoutAttr>> perAxis);

/// `layout` (null: replicated everywhere) with its layout on `axis`
/// replaced by `onAxis`.
Attribute replaceLayoutOnAxis(MLIRContext *context, Attribute layout,
                              StringRef axis, LayoutAttr onAxis);

/// Whether `op` is in one rank's part of a partitioned program
/// (`lamina.partitioned`).
bool isPartitioned(Operation *op);

/// The layout declared on a function argument (`lamina.layout`) on grid
/// axis `axis`, or null where none is declared.
LayoutAttr getDeclaredLayout(Value value,
                             StringRef axis = LaminaDialect::kTensorAxisName);

/// The training pair lamina-generate-backward recorded for function `entry`
/// in `module`'s `lamina.training`, or null.
TrainingPairAttr getTrainingPair(ModuleOp module, StringRef entry);

/// Records `pair` for function `entry` in `module`'s `lamina.training`.
void setTrainingPair(ModuleOp module, StringRef entry, TrainingPairAttr pair);

/// The packed weights lamina-hoist-weight-packing recorded for `function`
/// in `module`'s `lamina.weight_packing`, or null.
PackedWeightsAttr getPackedWeights(ModuleOp module, StringRef function);

/// The input and weight of an op computing x·Wᵀ that a #lamina.cpu_matmul
/// can lay out (a linear layer, lamina.matmul, lamina.fused_qkv), or nulls.
std::pair<Value, Value> getMatmulOperands(Operation *op);

/// Whether the matmul of `op` (see getMatmulOperands) has element-wise
/// steps after it in its own loop nest: a bias, an activation, an active
/// dropout or a rotation.
bool hasMatmulEpilogue(Operation *op);

/// The activation_grad that convert-lamina-to-linalg computes in the
/// epilogue of `matmul` (the backward's dH = (dY·W)·act′(x)): its one user,
/// taking its result as the cotangent, of the same type; or null.
ActivationGradOp getFusedActivationGrad(Operation *matmul);

/// The CPU layout lamina-select-cpu-strategy chose for `op`'s matmul
/// (`lamina.codegen`), or null.
CpuMatmulAttr getCpuMatmul(Operation *op);

/// The schedule lamina-select-cpu-loop-tiles chose for an op between
/// layers (`lamina.codegen`), or null.
CpuLoopTilesAttr getCpuLoopTiles(Operation *op);

/// The rank that runs pipeline stage function `function`
/// (`lamina.pipeline_stage`), if it is one.
std::optional<int64_t> getPipelineStage(Operation *function);
void setPipelineStage(Operation *function, int64_t rank);

/// Checks that `config` fits the matmul of `op`: the block divides N, pairs
/// of k have bf16 operands and an even K.
LogicalResult verifyCpuMatmul(Operation *op, CpuMatmulAttr config);

/// Marks `op` with its role in a lowered layer (`lamina.stage`).
void setLoweredStage(Operation *op, LoweredStage stage);

/// Whether `op` (possibly null) has the role `stage` in a lowered layer.
bool hasLoweredStage(Operation *op, LoweredStage stage);

/// Moves the module path the importer gives each op as its name location
/// (`loc("h.0.attn")`) into a `lamina.module` attribute, which survives
/// printing; the op keeps the name's child location.
void recordModulePaths(Operation *root);

/// Drops the module paths (`lamina.module`) of `root` and the ops in it:
/// once schedules and checkpoints have read them, they only name the layer
/// an op came from, which two layers' equal ops differ in.
void dropModulePaths(Operation *root);

/// Whether `op` computes part of the module at path `module`: its layer
/// `path`, or the module the importer recorded for it (`lamina.module`), is
/// `module` or one of its submodules' paths.
bool isInModule(Operation *op, StringRef module);

/// Whether the module path `path` is `module` or one of its submodules'.
bool isWithinModule(StringRef path, StringRef module);

/// Adds the constant offset base of `layer`'s dropout to its offset and
/// drops the operand; fails (changing nothing) without a constant one.
LogicalResult foldConstantLayerOffsetBase(LinearLayerOpInterface layer);

/// Whether `function` shards a value: a sharded argument or a sync point.
/// Without one, a program of several ranks computes the same on each (as a
/// pipeline of stages does).
bool shardsValues(FunctionOpInterface function);

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_IR_LAMINA_H
