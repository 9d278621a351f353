//===- LaminaTestDialect.h - Ops for tests of Lamina's interfaces -*- C++ -*-===//

#ifndef LAMINA_TEST_LIB_DIALECT_TEST_LAMINATESTDIALECT_H
#define LAMINA_TEST_LIB_DIALECT_TEST_LAMINATESTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "LaminaTestDialect.h.inc"

#define GET_OP_CLASSES
#include "LaminaTestOps.h.inc"

namespace mlir::lamina::test {
/// Registers the dialect and attaches the layout model of `scale`.
void registerLaminaTestDialect(DialectRegistry &registry);
} // namespace mlir::lamina::test

#endif // LAMINA_TEST_LIB_DIALECT_TEST_LAMINATESTDIALECT_H
