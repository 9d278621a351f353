//===- LnsToArith.h - LNS numbers as int64 codes and arith ------*- C++ -*-===//
//
// The patterns of convert-lns-to-arith, for passes that lower lns ops among
// others.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LNSTOARITH_LNSTOARITH_H
#define LAMINA_CONVERSION_LNSTOARITH_LNSTOARITH_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::lamina::lns {

/// !lns.num → i64; tensors of LNS numbers → tensors of i64; every other type
/// unchanged.
struct LnsCodeTypeConverter : TypeConverter {
  LnsCodeTypeConverter();
};

/// Every lns op → arith/math/scf/linalg on the codes `converter` gives:
/// element-wise ops through CodeBuilder, sum/matmul/linear as their
/// sequential (or vector) kernels; the table-mode linear kernel on vectors
/// of `vectorBits` (256 or 512).
void populateLnsToArithConversionPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns,
                                          unsigned vectorBits = 256);

} // namespace mlir::lamina::lns

#endif // LAMINA_CONVERSION_LNSTOARITH_LNSTOARITH_H
