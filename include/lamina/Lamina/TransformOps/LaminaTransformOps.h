//===- LaminaTransformOps.h - Slapo primitives as transform ops -*- C++ -*-===//

#ifndef LAMINA_LAMINA_TRANSFORMOPS_LAMINATRANSFORMOPS_H
#define LAMINA_LAMINA_TRANSFORMOPS_LAMINATRANSFORMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpImplementation.h"

#define GET_OP_CLASSES
#include "lamina/Lamina/TransformOps/LaminaTransformOps.h.inc"

namespace mlir {
class DialectRegistry;
namespace lamina {
/// Registers the transform.lamina.* ops with the transform dialect.
void registerTransformDialectExtension(DialectRegistry &registry);
} // namespace lamina
} // namespace mlir

#endif // LAMINA_LAMINA_TRANSFORMOPS_LAMINATRANSFORMOPS_H
