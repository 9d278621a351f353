//===- LaminaLayoutInterface.td - Layout and partition rules -*- tablegen -*-===//
//
// Every op a sharded Lamina program passes values through states, in one
// place, how the R / S(axis) / P layouts of the spec (§2–3) flow through
// it: forward (the layouts of its results), backward (the layouts of its
// operands' gradients) and what one rank computes of it (its partition).
// Layout inference, the gradient-layout check and the partitioner are
// generic drivers over this interface; ops without a model are element-wise
// to them (sharded values pass only through ops that keep their shapes).
// The rules of lamina ops and of the upstream ops found between layers
// (tensor reshapes and slices, linalg transposes and batch matmuls) are
// attached as external models (lib/Dialect/Lamina/Layouts), in the manner
// of upstream's ShardingInterface models.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_LAYOUT_INTERFACE_TD
#define LAMINA_LAMINA_LAYOUT_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Lamina_LayoutOpInterface : OpInterface<"LayoutOpInterface"> {
  let cppNamespace = "::mlir::lamina";
  let description = [{
    The op's layout rules. `inferResultLayout` gives the layout of every
    result from the layouts of the operands, or the reason the op rejects
    them (the driver reports it on the op). `inferOperandGradientLayouts`
    adds, for each operand, the layout its gradient takes from the gradients
    of the results (`state.addGradient`), or reports on the op why the
    backward would be wrong. `partition` rewrites the op in place into what
    one rank computes, its operands already rewritten.
  }];
  let methods = [
    InterfaceMethod<"The layout of the results, or why there is none.",
      "::mlir::lamina::LayoutOrError", "inferResultLayout",
      (ins "::mlir::lamina::LayoutState &":$state)>,
    InterfaceMethod<"Adds the gradient layouts of the operands.",
      "::mlir::LogicalResult", "inferOperandGradientLayouts",
      (ins "::mlir::lamina::GradientLayoutState &":$state), [{}], [{
        return state.addElementwiseGradients($_op.getOperation());
      }]>,
    InterfaceMethod<"Rewrites the op into one rank's part.",
      "::mlir::LogicalResult", "partition",
      (ins "::mlir::lamina::PartitionState &":$state), [{}], [{
        return state.partitionElementwise($_op.getOperation());
      }]>,
  ];
}

#endif // LAMINA_LAMINA_LAYOUT_INTERFACE_TD
