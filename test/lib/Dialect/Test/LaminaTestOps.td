//===- LaminaTestOps.td - Ops for tests of Lamina's interfaces -*- tablegen -*-===//

#ifndef LAMINA_TEST_OPS_TD
#define LAMINA_TEST_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def LaminaTest_Dialect : Dialect {
  let name = "lamina_test";
  let cppNamespace = "::mlir::lamina::test";
  let summary = "Ops for tests of Lamina's interfaces";
}

class LaminaTest_Op<string mnemonic, list<Trait> traits = []>
    : Op<LaminaTest_Dialect, mnemonic, traits>;

def LaminaTest_ScaleOp
    : LaminaTest_Op<"scale", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "x · factor, with a layout model (LayoutOpInterface)";
  let description = [{
    Scaling is linear, so its layout model lets every layout through,
    partial sums included, which the element-wise rule of ops without a
    model rejects.
  }];
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$factor);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
}

def LaminaTest_UnmodelledScaleOp
    : LaminaTest_Op<"unmodelled_scale",
                    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "x · factor, without a layout model";
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$factor);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
}

#endif // LAMINA_TEST_OPS_TD
