//===- LaminaAutodiffInterface.td - Reverse-mode rules -----*- tablegen -*-===//
//
// Every op a Lamina program differentiates through states its
// vector-Jacobian product through this interface: given the cotangents of
// its results, it builds the cotangents of its operands in the backward
// function. lamina-generate-backward stays generic: it walks the forward
// function in reverse and asks each op. Rules for lamina ops and for the
// upstream ops found between layers (arith, tensor reshapes, linalg
// transposes and batch matmuls) are attached as external models
// (lib/Dialect/Lamina/Autodiff), in the manner of Enzyme-MLIR's
// AutoDiffOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_AUTODIFF_INTERFACE_TD
#define LAMINA_LAMINA_AUTODIFF_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Lamina_ReverseDifferentiableOpInterface
    : OpInterface<"ReverseDifferentiableOpInterface"> {
  let cppNamespace = "::mlir::lamina";
  let description = [{
    The op's reverse-mode rule. `resultCotangents` holds one backward value
    per result (a zero tensor where nothing flows back); the rule writes the
    cotangent of each operand into `operandCotangents` (left null for
    operands that take none: integer seeds, shapes, `outs` of destination-
    style ops). Primal values the rule needs come from `state.getPrimal`,
    which saves them from the forward pass or recomputes them, as the
    generator decides.
  }];
  let methods = [
    InterfaceMethod<"Builds the cotangents of the operands.",
      "::mlir::LogicalResult", "buildVectorJacobianProduct",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::lamina::ReverseState &":$state,
           "::llvm::ArrayRef<::mlir::Value>":$resultCotangents,
           "::llvm::MutableArrayRef<::mlir::Value>":$operandCotangents)>,
  ];
}

#endif // LAMINA_LAMINA_AUTODIFF_INTERFACE_TD
