//===- LnsTypes.td - Types of the lns dialect --------------*- tablegen -*-===//

#ifndef LAMINA_LNS_TYPES_TD
#define LAMINA_LNS_TYPES_TD

include "Lns/IR/LnsDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Lns_NumType : TypeDef<Lns_Dialect, "Num"> {
  let mnemonic = "num";
  let summary = "an LNS number in base 2^(2^-f) or an explicit base";
  let description = [{
    A logarithmic number stored as a packed int64 code. The base is either
    given by `f` fractional bits of the base-2 logarithm,
    `b = pow(2.0, pow(2.0, -f))` evaluated in double, or explicitly as a
    double `b > 1`; exactly one of the two is present.

    ```mlir
    !lns.num<f = 23>      // the reference's default base
    !lns.num<b = 1.5>     // an explicit base
    ```
  }];
  let parameters = (ins
    OptionalParameter<"std::optional<unsigned>">:$fracBits,
    OptionalParameter<"::mlir::FloatAttr">:$explicitBase);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilder<(ins "unsigned":$fracBits), [{
      return $_get($_ctxt, std::optional<unsigned>(fracBits), ::mlir::FloatAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The base as the reference computes it, in double.
    double getBase() const;
    /// `log(b)` of that double; every rounding in the spec divides by it.
    double getLogBase() const;
    /// Whether two LNS types denote the same base (codes are interchangeable).
    bool hasSameBase(NumType other) const;
  }];
}

/// A scalar LNS number or a tensor of them.
def Lns_NumOrTensor : AnyTypeOf<[Lns_NumType, TensorOf<[Lns_NumType]>],
                                "LNS number or tensor of LNS numbers">;
def Lns_RankedTensor : RankedTensorOf<[Lns_NumType]>;

#endif // LAMINA_LNS_TYPES_TD
