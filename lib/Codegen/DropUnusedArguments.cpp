//===- DropUnusedArguments.cpp - Internal functions lose unread arguments -===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINADROPUNUSEDARGUMENTS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {

/// The direct calls of each function the module refers to only by calls;
/// the functions it refers to otherwise (an address taken) are left out.
llvm::DenseMap<StringAttr, SmallVector<LLVM::CallOp>>
collectDirectCalls(ModuleOp module) {
  llvm::DenseMap<StringAttr, SmallVector<LLVM::CallOp>> calls;
  llvm::DenseSet<StringAttr> referenced;
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(
      &module.getBodyRegion());
  if (!uses)
    return calls;
  for (const SymbolTable::SymbolUse &use : *uses) {
    StringAttr name = use.getSymbolRef().getRootReference();
    auto call = dyn_cast<LLVM::CallOp>(use.getUser());
    if (call && call.getCalleeAttr() == use.getSymbolRef())
      calls[name].push_back(call);
    else
      referenced.insert(name);
  }
  for (StringAttr name : referenced)
    calls.erase(name);
  return calls;
}

/// `call` without the arguments at `dropped`.
void dropCallArguments(LLVM::CallOp call, LLVM::LLVMFuncOp callee,
                       const llvm::BitVector &dropped) {
  SmallVector<Value> kept;
  for (auto [index, operand] : llvm::enumerate(call.getArgOperands()))
    if (!dropped.test(index))
      kept.push_back(operand);
  OpBuilder builder(call);
  auto replacement =
      LLVM::CallOp::create(builder, call.getLoc(), callee, kept);
  replacement->setDiscardableAttrs(call->getDiscardableAttrDictionary());
  call.replaceAllUsesWith(replacement.getResults());
  call.erase();
}

struct LaminaDropUnusedArgumentsPass
    : mlir::lamina::impl::LaminaDropUnusedArgumentsBase<
          LaminaDropUnusedArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseMap<StringAttr, SmallVector<LLVM::CallOp>> calls =
        collectDirectCalls(module);
    for (auto function : module.getOps<LLVM::LLVMFuncOp>()) {
      if (function.isExternal() || function.isVarArg() ||
          (function.getLinkage() != LLVM::Linkage::Internal &&
           function.getLinkage() != LLVM::Linkage::Private &&
           !function.isPrivate()))
        continue;
      Block &entry = function.getBody().front();
      llvm::BitVector dropped(entry.getNumArguments());
      for (BlockArgument argument : entry.getArguments())
        if (argument.use_empty())
          dropped.set(argument.getArgNumber());
      if (dropped.none())
        continue;
      auto called = calls.find(function.getNameAttr());
      if (called == calls.end())
        continue;
      SmallVector<Type> kept;
      for (auto [index, type] :
           llvm::enumerate(function.getFunctionType().getParams()))
        if (!dropped.test(index))
          kept.push_back(type);
      // The kept arguments keep their attributes (noalias, alignment).
      SmallVector<DictionaryAttr> keptAttrs;
      if (ArrayAttr attrs = function.getArgAttrsAttr())
        for (auto [index, attr] : llvm::enumerate(attrs))
          if (!dropped.test(index))
            keptAttrs.push_back(cast<DictionaryAttr>(attr));
      function.removeArgAttrsAttr();
      entry.eraseArguments(dropped);
      function.setFunctionType(LLVM::LLVMFunctionType::get(
          function.getFunctionType().getReturnType(), kept));
      if (!keptAttrs.empty())
        function.setAllArgAttrs(keptAttrs);
      for (LLVM::CallOp call : called->second)
        dropCallArguments(call, function, dropped);
    }
  }
};
} // namespace
