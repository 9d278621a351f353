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

#define GET_OP_CLASSES
#include "lamina/Lamina/IR/LaminaOps.h.inc"

namespace mlir::lamina {

/// The world size declared by the module holding `op` (`lamina.world_size`).
std::optional<int64_t> getWorldSize(Operation *op);

/// Whether `op` is in one rank's part of a partitioned program
/// (`lamina.partitioned`).
bool isPartitioned(Operation *op);

/// The layout declared on a function argument (`lamina.layout`), or null.
LayoutAttr getDeclaredLayout(Value value);

/// What every x·Wᵀ layer computes, in the spec's order:
/// matmul → [sync] → [bias] → [activation] → [dropout].
struct LinearLayerParts {
  StringAttr path;
  Value input, weight;
  SyncAttr sync;         // null: no sync point
  Value bias;            // null: no bias
  ActivationKindAttr activation; // null: no activation
  DropoutAttr dropout;   // null: no dropout
  Value seed;            // null unless the dropout is active
  Value rank;            // null unless the program is partitioned
};

/// The parts of a linear layer op (linear, linear_separate_bias,
/// linear_sync, linear_act, linear_dropout, fused_linear); nullopt for any
/// other op.
std::optional<LinearLayerParts> getLinearLayerParts(Operation *op);

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_IR_LAMINA_H
