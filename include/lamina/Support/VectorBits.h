//===- VectorBits.h - The vector widths CPU kernels take --------*- C++ -*-===//

#ifndef LAMINA_SUPPORT_VECTORBITS_H
#define LAMINA_SUPPORT_VECTORBITS_H

#include "mlir/IR/Operation.h"

namespace mlir::lamina {

/// Checks a pass's `vector-bits` option: 256 (AVX2) or 512 (AVX-512); else
/// reports it on `op`.
inline LogicalResult verifyVectorBits(Operation *op, unsigned vectorBits) {
  if (vectorBits == 256 || vectorBits == 512)
    return success();
  return op->emitError() << "vector-bits must be 256 (AVX2) or 512 "
                            "(AVX-512); got "
                         << vectorBits;
}

} // namespace mlir::lamina

#endif // LAMINA_SUPPORT_VECTORBITS_H
