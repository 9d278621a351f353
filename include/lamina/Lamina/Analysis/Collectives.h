//===- Collectives.h - The shard op of a collective -------------*- C++ -*-===//
//
// One builder of the `shard` ops that implement a layout::Collective, for
// the partitioner (forward syncs), the reverse-mode rules (their backward
// collectives) and backward generation (parameter and input gradients),
// and of the all-reduces that vocabulary-parallel ops lower to.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_ANALYSIS_COLLECTIVES_H
#define LAMINA_LAMINA_ANALYSIS_COLLECTIVES_H

#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/IR/Builders.h"

namespace mlir::shard {
enum class ReductionKind : uint32_t;
} // namespace mlir::shard

namespace mlir::lamina::layout {

/// The position of the tensor axis (`tp`) in the grid of the module
/// holding `scope` (0 where the grid is one axis or undeclared): the axis
/// the collectives of schedules' syncs run on.
int16_t getTensorAxisIndex(Operation *scope);

/// `collective` of `input` (sums for the reductions), giving a value of
/// `resultType`, on `grid`'s `axes`: by default the partitioned module's
/// grid (LaminaDialect::kGridName) and its tensor axis.
Value buildCollective(OpBuilder &b, Location loc, Collective collective,
                      Value input, Type resultType,
                      FlatSymbolRefAttr grid = {}, DenseI16ArrayAttr axes = {});

/// An all-reduce of `input` by `reduction` (sums, maxima) on the partitioned
/// module's grid, over its tensor axis.
Value buildAllReduce(OpBuilder &b, Location loc, Value input,
                     shard::ReductionKind reduction);

} // namespace mlir::lamina::layout

#endif // LAMINA_LAMINA_ANALYSIS_COLLECTIVES_H
