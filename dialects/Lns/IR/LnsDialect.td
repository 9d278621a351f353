//===- LnsDialect.td - The lns dialect definition ----------*- tablegen -*-===//
//
// Logarithmic-number-system arithmetic, bit-exact with the xlnstorch reference.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LNS_DIALECT_TD
#define LAMINA_LNS_DIALECT_TD

include "mlir/IR/OpBase.td"

def Lns_Dialect : Dialect {
  let name = "lns";
  let cppNamespace = "::mlir::lamina::lns";
  let summary = "Logarithmic number system (LNS) numbers and arithmetic";
  let description = [{
    An LNS value is one signed 64-bit code `p = 2·e + s`: `e` is the integer
    logarithm of the magnitude in base `b`, `s` the sign bit. Zero is the
    sentinel `-(2^53) | 1`; `-(2^53)` also means zero. Multiplication,
    division, negation, absolute value, square root and integer powers are
    integer operations on codes; addition uses Gaussian logarithms (`sbdb`).
    Results reproduce the xlnstorch reference bit for bit, including the
    order of reductions, which is part of the semantics.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

#endif // LAMINA_LNS_DIALECT_TD
