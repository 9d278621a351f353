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

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"
#include "lamina/Lamina/IR/LaminaInterfaces.h"

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

/// Moves the module path the importer gives each op as its name location
/// (`loc("h.0.attn")`) into a `lamina.module` attribute, which survives
/// printing; the op keeps the name's child location.
void recordModulePaths(Operation *root);

/// Whether `op` computes part of the module at path `module`: its layer
/// `path`, or the module the importer recorded for it (`lamina.module`), is
/// `module` or one of its submodules' paths.
bool isInModule(Operation *op, StringRef module);

} // namespace mlir::lamina

#endif // LAMINA_LAMINA_IR_LAMINA_H
