//===- LnsAttrs.td - Attributes of the lns dialect ---------*- tablegen -*-===//

#ifndef LAMINA_LNS_ATTRS_TD
#define LAMINA_LNS_ATTRS_TD

include "Lns/IR/LnsDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Lns_SbdbIdeal : I32EnumAttrCase<"ideal", 0>;
def Lns_SbdbTable : I32EnumAttrCase<"table", 1>;
def Lns_SbdbModeEnum : I32EnumAttr<"SbdbMode",
    "implementation of the Gaussian logarithms sb/db",
    [Lns_SbdbIdeal, Lns_SbdbTable]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina::lns";
}
def Lns_SbdbModeAttr : EnumAttr<Lns_Dialect, Lns_SbdbModeEnum, "sbdb"> {
  let summary = "Gaussian-log implementation: `ideal` (double formula) or "
                "`table` (precomputed ideal values, f <= 16)";
}

def Lns_OrderSequential : I32EnumAttrCase<"sequential", 0>;
def Lns_OrderPairwise : I32EnumAttrCase<"pairwise", 1>;
def Lns_ReductionOrderEnum : I32EnumAttr<"ReductionOrder",
    "order in which a reduction adds its terms",
    [Lns_OrderSequential, Lns_OrderPairwise]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina::lns";
}
def Lns_ReductionOrderAttr : EnumAttr<Lns_Dialect, Lns_ReductionOrderEnum,
                                      "order"> {
  let summary = "reduction order: `sequential` (the reference, default) or "
                "`pairwise` (an explicit, non-reference mode)";
}

def Lns_CmpEq : I32EnumAttrCase<"eq", 0>;
def Lns_CmpNe : I32EnumAttrCase<"ne", 1>;
def Lns_CmpLt : I32EnumAttrCase<"lt", 2>;
def Lns_CmpLe : I32EnumAttrCase<"le", 3>;
def Lns_CmpGt : I32EnumAttrCase<"gt", 4>;
def Lns_CmpGe : I32EnumAttrCase<"ge", 5>;
def Lns_ComparePredicateEnum : I32EnumAttr<"ComparePredicate",
    "how lns.cmp compares two LNS numbers",
    [Lns_CmpEq, Lns_CmpNe, Lns_CmpLt, Lns_CmpLe, Lns_CmpGt, Lns_CmpGe]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina::lns";
}
def Lns_ComparePredicateAttr : EnumAttr<Lns_Dialect, Lns_ComparePredicateEnum,
                                        "cmp_predicate"> {
  let summary = "comparison predicate: `eq`, `ne` (codes), `lt`, `le`, `gt`, "
                "`ge` (the reference's order)";
}

def Lns_ReduceNone : I32EnumAttrCase<"none", 0>;
def Lns_ReduceMean : I32EnumAttrCase<"mean", 1>;
def Lns_ReduceSum : I32EnumAttrCase<"sum", 2>;
def Lns_LossReductionEnum : I32EnumAttr<"LossReduction",
    "how a loss reduces its per-sample terms",
    [Lns_ReduceNone, Lns_ReduceMean, Lns_ReduceSum]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina::lns";
}
def Lns_LossReductionAttr : EnumAttr<Lns_Dialect, Lns_LossReductionEnum,
                                     "reduction"> {
  let summary = "a loss's reduction: `none` (per sample), `mean` or `sum` "
                "(sequential, as torch.nn.functional names them)";
}

#endif // LAMINA_LNS_ATTRS_TD
