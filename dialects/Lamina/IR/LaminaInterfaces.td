//===- LaminaInterfaces.td - What layers have in common ----*- tablegen -*-===//
//
// Passes ask these interfaces what a layer is (its path, input, parameters,
// sync point and epilogue) instead of switching over op types or looking up
// attributes by name. The layer base classes of LaminaOps.td attach them; the
// default implementations read the accessors each op declares in ODS, so an
// op gets an epilogue step exactly when it has the operand or attribute.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_INTERFACES_TD
#define LAMINA_LAMINA_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Lamina_LayerOpInterface : OpInterface<"LayerOpInterface"> {
  let cppNamespace = "::mlir::lamina";
  let description = [{
    A module of the model: schedules address it by its module path
    (`named_modules` names) and reach its parameters by name ("weight",
    "bias") or its "input".
  }];
  let methods = [
    InterfaceMethod<"The module path (e.g. `h.0.mlp.fc_in`).",
      "::mlir::StringAttr", "getLayerPath", (ins), [{}],
      [{ return $_op.getPathAttr(); }]>,
    InterfaceMethod<"The activation the layer takes.",
      "::mlir::Value", "getLayerInput", (ins), [{}],
      [{ return $_op.getInput(); }]>,
    InterfaceMethod<"The weight (null for a layer without one).",
      "::mlir::Value", "getLayerWeight", (ins), [{}],
      [{ return $_op.getWeight(); }]>,
    InterfaceMethod<"Makes `value` the layer's input.",
      "void", "setLayerInput", (ins "::mlir::Value":$value), [{}],
      [{ $_op.getInputMutable().assign(value); }]>,
    InterfaceMethod<[{
        The operand named `name` ("weight", "bias" or "input"), or null when
        the layer has none of that name.
      }],
      "::mlir::Value", "getLayerOperand", (ins "::llvm::StringRef":$name),
      [{}], [{
        if (name == "input")
          return $_op.getInput();
        if (name == "weight")
          return $_op.getWeight();
        if (name == "bias")
          return $_op.getBias();
        return {};
      }]>,
  ];
}

def Lamina_LinearLayerOpInterface
    : OpInterface<"LinearLayerOpInterface", [Lamina_LayerOpInterface]> {
  let cppNamespace = "::mlir::lamina";
  let description = [{
    A layer computing `x·Wᵀ` followed by the spec's ordered epilogue
    `[sync] → [bias] → [activation] → [dropout]` (a `fwd_pre` sync acts on
    the input instead). Every member of the Slapo linear family and the
    fused form implement it; each step is absent (null) when the op has no
    slot for it or the slot is empty.
  }];
  let methods = [
    InterfaceMethod<"The sync point, or null.",
      "::mlir::lamina::SyncAttr", "getLayerSync", (ins), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasSyncSlot<ConcreteOp>)
          return $_op.getSyncAttr();
        return {};
      }]>,
    InterfaceMethod<"Whether the op can carry a sync point.",
      "bool", "hasSyncSlot", (ins), [{}], [{
        return ::mlir::lamina::detail::kHasSyncSlot<ConcreteOp>;
      }]>,
    InterfaceMethod<"Sets the sync point; the op must have a slot for it.",
      "void", "setLayerSync", (ins "::mlir::lamina::SyncAttr":$sync), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasSyncSlot<ConcreteOp>)
          $_op.setSyncAttr(sync);
        else
          llvm_unreachable("the layer has no sync slot");
      }]>,
    InterfaceMethod<"The bias, or null.",
      "::mlir::Value", "getLayerBias", (ins), [{}],
      [{ return $_op.getBias(); }]>,
    InterfaceMethod<"The activation, or null.",
      "::mlir::lamina::ActivationKindAttr", "getLayerActivation", (ins), [{}],
      [{
        if constexpr (::mlir::lamina::detail::kHasActivation<ConcreteOp>)
          return $_op.getActivationAttr();
        return {};
      }]>,
    InterfaceMethod<"The dropout, or null.",
      "::mlir::lamina::DropoutAttr", "getLayerDropout", (ins), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasDropout<ConcreteOp>)
          return $_op.getDropoutAttr();
        return {};
      }]>,
    InterfaceMethod<"Replaces the dropout; the op must have one.",
      "void", "setLayerDropout", (ins "::mlir::lamina::DropoutAttr":$dropout),
      [{}], [{
        if constexpr (::mlir::lamina::detail::kHasDropout<ConcreteOp>)
          $_op.setDropoutAttr(dropout);
        else
          llvm_unreachable("the layer has no dropout");
      }]>,
    InterfaceMethod<"The dropout seed, or null.",
      "::mlir::Value", "getLayerSeed", (ins), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasSeed<ConcreteOp>)
          return $_op.getSeed();
        return {};
      }]>,
    InterfaceMethod<"The base added to the dropout's offset, or null.",
      "::mlir::Value", "getLayerOffsetBase", (ins), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasOffsetBase<ConcreteOp>)
          return $_op.getOffsetBase();
        return {};
      }]>,
    InterfaceMethod<"Sets the base added to the dropout's offset; the op "
                    "must have a dropout.",
      "void", "setLayerOffsetBase", (ins "::mlir::Value":$base), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasOffsetBase<ConcreteOp>) {
          if (base)
            $_op.getOffsetBaseMutable().assign(base);
          else
            $_op.getOffsetBaseMutable().clear();
        } else {
          llvm_unreachable("the layer has no dropout");
        }
      }]>,
    InterfaceMethod<"The rank keying a partitioned dropout, or null.",
      "::mlir::Value", "getLayerRank", (ins), [{}], [{
        if constexpr (::mlir::lamina::detail::kHasRank<ConcreteOp>)
          return $_op.getRank();
        return {};
      }]>,
  ];
  let extraSharedClassDeclaration = [{
    /// All of the layer's parts at once, in the spec's order.
    ::mlir::lamina::LinearLayerParts getLayerParts() {
      return {$_op.getLayerPath(), $_op.getLayerInput(), $_op.getLayerWeight(),
              $_op.getLayerSync(), $_op.getLayerBias(),
              $_op.getLayerActivation(), $_op.getLayerDropout(),
              $_op.getLayerSeed(), $_op.getLayerRank(),
              $_op.getLayerOffsetBase()};
    }
  }];
}

#endif // LAMINA_LAMINA_INTERFACES_TD
