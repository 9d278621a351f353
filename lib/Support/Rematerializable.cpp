//===- Rematerializable.cpp - Values any function can rebuild -------------===//

#include "lamina/Support/Rematerializable.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::lamina;

SmallVector<Value> mlir::lamina::getValuesReadBy(Operation *op) {
  llvm::SetVector<Value> values(op->operand_begin(), op->operand_end());
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, values);
  return values.takeVector();
}

bool Rematerializable::operator()(Operation *op) {
  auto [it, inserted] = known.try_emplace(op, false);
  if (!inserted)
    return it->second;
  bool result;
  if (op->hasTrait<OpTrait::ConstantLike>())
    result = op->getNumOperands() == 0;
  else
    result = op->getNumResults() > 0 && isMemoryEffectFree(op) &&
             llvm::all_of(getValuesReadBy(op),
                          [&](Value value) { return (*this)(value); });
  known[op] = result;
  return result;
}

bool Rematerializable::operator()(Value value) {
  Operation *def = value.getDefiningOp();
  return def && (*this)(def);
}
