//===- Lns.h - The lns dialect ----------------------------------*- C++ -*-===//
//
// Logarithmic-number-system numbers (packed int64 codes) and their ops.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LNS_IR_LNS_H
#define LAMINA_LNS_IR_LNS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lamina/Lns/IR/LnsOpsDialect.h.inc"

#include "lamina/Lns/IR/LnsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "lamina/Lns/IR/LnsAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "lamina/Lns/IR/LnsOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "lamina/Lns/IR/LnsOps.h.inc"

namespace mlir::lamina::lns {

/// Largest f for which the `table` Gaussian-log mode is defined: 2.2 M
/// entries per sign at f = 16, 43 M at f = 20.
inline constexpr unsigned kMaxTableFracBits = 16;

/// Returns the LNS element type of `type` (a scalar LNS type or a tensor of
/// them), or null.
NumType getLnsElementType(Type type);

} // namespace mlir::lamina::lns

#endif // LAMINA_LNS_IR_LNS_H
