//===- InlineBlocks.cpp - Block functions' calls inlined -------------------===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAINLINEBLOCKS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// Renames the module paths of `op` and the ops in it from the block's
/// first instance to `instance` (the call's).
static void renameInstance(Operation *op, StringRef instance) {
  StringRef list = instance.rsplit('.').first;
  op->walk([&](Operation *nested) {
    for (StringRef name : {StringRef("path"),
                           StringRef(LaminaDialect::kModuleAttrName)}) {
      auto path = nested->getAttrOfType<StringAttr>(name);
      if (!path)
        continue;
      StringRef rest = path.getValue();
      // "<list>.<n><rest>" → "<instance><rest>"
      if (!rest.consume_front(list) || !rest.consume_front("."))
        continue;
      rest = rest.drop_while(llvm::isDigit);
      nested->setAttr(name,
                      StringAttr::get(op->getContext(), instance + rest));
    }
  });
}

/// Replaces `call` by `callee`'s body (one block): the ops get the call's
/// instance in their paths, dropouts their constant offset bases folded.
static void inlineCall(func::CallOp call, func::FuncOp callee) {
  Block &body = callee.getBody().front();
  IRMapping mapping;
  mapping.map(body.getArguments(), call.getOperands());
  auto instance =
      call->getAttrOfType<StringAttr>(LaminaDialect::kModuleAttrName);
  OpBuilder builder(call);
  Operation *clone = nullptr;
  for (Operation &op : body.without_terminator()) {
    clone = builder.clone(op, mapping);
    if (instance)
      renameInstance(clone, instance.getValue());
    if (auto dropout = dyn_cast<DropoutOp>(clone))
      (void)dropout.foldConstantOffsetBase();
    if (auto layer = dyn_cast<LinearLayerOpInterface>(clone))
      (void)foldConstantLayerOffsetBase(layer);
  }
  // A pipeline stage that ended after the call ends after its last op.
  if (clone && call->hasAttr(LaminaDialect::kPipelineCutAttrName))
    clone->setAttr(LaminaDialect::kPipelineCutAttrName,
                   builder.getUnitAttr());
  for (auto [result, returned] :
       llvm::zip_equal(call.getResults(), body.getTerminator()->getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(returned));
  call.erase();
}

namespace {
struct LaminaInlineBlocksPass
    : mlir::lamina::impl::LaminaInlineBlocksBase<LaminaInlineBlocksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> blocks;
    for (auto function : module.getOps<func::FuncOp>())
      if (function->hasAttr(LaminaDialect::kBlockAttrName))
        blocks.push_back(function);
    if (blocks.empty())
      return;
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && callee->hasAttr(LaminaDialect::kBlockAttrName))
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee.getBody().hasOneBlock()) {
        call.emitOpError("calls block function @")
            << callee.getSymName()
            << ", which has control flow; blocks are functions of one block";
        return signalPassFailure();
      }
      inlineCall(call, callee);
    }
    // Blocks call no blocks: none is called any more.
    for (func::FuncOp block : blocks)
      if (block.isPrivate() &&
          SymbolTable::symbolKnownUseEmpty(block, module))
        block.erase();
  }
};
} // namespace
