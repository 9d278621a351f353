//===- LaminaNumberFormatInterface.td - Number formats in training -*- tablegen -*-===//
//
// What the generic training passes ask of an element type, so that a number
// format (builtin floats, LNS numbers) plugs in through one model instead
// of branches on its name in each pass.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_NUMBER_FORMAT_INTERFACE_TD
#define LAMINA_LAMINA_NUMBER_FORMAT_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Lamina_NumberFormatTypeInterface
    : TypeInterface<"NumberFormatTypeInterface"> {
  let cppNamespace = "::mlir::lamina";
  let description = [{
    An element type whose values carry gradients: what a gradient of it
    starts from (its zero), how the gradients one value receives from
    several uses add up, and how a gradient sums over rows (a bias's
    gradient). `lamina-generate-backward` differentiates the values whose
    element type has a model and asks nothing else of their format. Builtin
    floats and `!lns.num` have models (lib/Dialect/Lamina/Autodiff/
    NumberFormats.cpp).
  }];
  let methods = [
    InterfaceMethod<"The zero a gradient of this type starts from, a scalar.",
      "::mlir::Value", "buildGradientZero",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc)>,
    InterfaceMethod<[{
        The sum of two gradient tensors of this element type that reach one
        value from two of its uses; failure where the format does not add
        them, with `whyNot` completing "result, …" / "argument N, …".
      }],
      "::mlir::FailureOr<::mlir::Value>", "buildGradientSum",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$lhs, "::mlir::Value":$rhs,
           "std::string &":$whyNot)>,
    InterfaceMethod<[{
        The sum of a gradient tensor over every dim but its last (the
        gradient of a bias broadcast over rows), in the format's order.
      }],
      "::mlir::Value", "buildGradientSumOverRows",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$gradient)>,
  ];
}

#endif // LAMINA_LAMINA_NUMBER_FORMAT_INTERFACE_TD
