//===- LaminaAutodiffInterface.h - Reverse-mode rules -----------*- C++ -*-===//

#ifndef LAMINA_LAMINA_IR_LAMINAAUTODIFFINTERFACE_H
#define LAMINA_LAMINA_IR_LAMINAAUTODIFFINTERFACE_H

#include "mlir/IR/OpDefinition.h"

namespace mlir {
class DialectRegistry;
namespace lamina {

/// What a reverse-mode rule may ask of the backward function being built.
class ReverseState {
public:
  virtual ~ReverseState() = default;
  /// The value `forward` (a value of the forward function) has in the
  /// backward function: an argument, a value saved by the forward pass, or
  /// a recomputation of it.
  virtual Value getPrimal(Value forward) = 0;
  /// Whether a gradient flows to `forward` (a value of the forward
  /// function): a rule may leave the cotangent of an inactive operand null,
  /// and must reject what it cannot differentiate only when it is active.
  virtual bool isActive(Value forward) const = 0;
};

/// Attaches the reverse-mode rules of lamina ops and of the upstream ops
/// Lamina programs contain (lib/Dialect/Lamina/Autodiff).
void registerReverseDifferentiationModels(DialectRegistry &registry);

} // namespace lamina
} // namespace mlir

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h.inc"

#endif // LAMINA_LAMINA_IR_LAMINAAUTODIFFINTERFACE_H
