//===- LaminaNumberFormatInterface.h - Number formats in training -*- C++ -*-===//
//
// NumberFormatTypeInterface (LaminaNumberFormatInterface.td): what the
// generic training passes ask of an element type.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_IR_LAMINANUMBERFORMATINTERFACE_H
#define LAMINA_LAMINA_IR_LAMINANUMBERFORMATINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Types.h"

#include <string>

namespace mlir {
class DialectRegistry;
namespace lamina {

/// Attaches the number-format models of builtin floats and LNS numbers
/// (lib/Dialect/Lamina/Autodiff/NumberFormats.cpp).
void registerNumberFormatModels(DialectRegistry &registry);

} // namespace lamina
} // namespace mlir

#include "lamina/Lamina/IR/LaminaNumberFormatInterface.h.inc"

#endif // LAMINA_LAMINA_IR_LAMINANUMBERFORMATINTERFACE_H
