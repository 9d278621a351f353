//===- Rematerializable.h - Values any function can rebuild ------*- C++ -*-===//
//
// Constants, and what side-effect-free ops compute from them alone (empty
// tensors, their fills, a mask built from constants). The outliners of
// repeated layers rebuild such values inside each layer: a folder or CSE
// makes one of them for several layers, which would otherwise make the
// first layer differ from the others.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_SUPPORT_REMATERIALIZABLE_H
#define LAMINA_SUPPORT_REMATERIALIZABLE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::lamina {

/// The values `op` reads from outside itself: its operands and the values
/// its regions capture.
SmallVector<Value> getValuesReadBy(Operation *op);

/// Whether ops and values are rematerializable, remembered per op.
class Rematerializable {
public:
  bool operator()(Operation *op);
  bool operator()(Value value);

private:
  DenseMap<Operation *, bool> known;
};

} // namespace mlir::lamina

#endif // LAMINA_SUPPORT_REMATERIALIZABLE_H
