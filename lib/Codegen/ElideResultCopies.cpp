//===- ElideResultCopies.cpp - Results written into their out-parameters --===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAELIDERESULTCOPIES
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {

/// Whether `copy` moves a buffer of its function into an out-parameter
/// that can take the buffer's place: the source a fresh allocation of the
/// same type in the same block, used only before the copy (so nothing
/// writes it after its value is final), the target an argument that
/// nothing else uses.
bool isElidable(memref::CopyOp copy) {
  auto target = dyn_cast<BlockArgument>(copy.getTarget());
  auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
  if (!target || !alloc || !target.hasOneUse() ||
      target.getType() != alloc.getType() ||
      target.getOwner() != copy->getBlock() ||
      alloc->getBlock() != copy->getBlock())
    return false;
  Block *block = copy->getBlock();
  return llvm::all_of(alloc->getUsers(), [&](Operation *user) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    return user == copy.getOperation() ||
           (inBlock && inBlock->isBeforeInBlock(copy));
  });
}

struct LaminaElideResultCopiesPass
    : lamina::impl::LaminaElideResultCopiesBase<LaminaElideResultCopiesPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    SmallVector<memref::CopyOp> copies;
    for (auto copy : function.getBody().front().getOps<memref::CopyOp>())
      if (isElidable(copy))
        copies.push_back(copy);
    for (memref::CopyOp copy : copies) {
      Operation *alloc = copy.getSource().getDefiningOp();
      Value target = copy.getTarget();
      copy->erase();
      alloc->getResult(0).replaceAllUsesWith(target);
      alloc->erase();
    }
  }
};

} // namespace
