//===- DeduplicateFunctions.cpp - One copy of identical functions ---------===//

#include "lamina/Codegen/Passes.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINADEDUPLICATEFUNCTIONS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {

/// `function` printed with its name set aside: equal texts, equal
/// functions.
std::string printWithoutName(func::FuncOp function) {
  StringAttr name = function.getSymNameAttr();
  function.setSymName("");
  std::string text;
  llvm::raw_string_ostream os(text);
  function->print(os, OpPrintingFlags().useLocalScope().assumeVerified());
  function.setSymNameAttr(name);
  return text;
}

struct DeduplicateFunctionsPass
    : lamina::impl::LaminaDeduplicateFunctionsBase<DeduplicateFunctionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Functions of the same text are the same: their first is kept.
    llvm::StringMap<func::FuncOp> firstOfKind;
    // Name of a duplicate → the name of the function it duplicates.
    DenseMap<StringAttr, FlatSymbolRefAttr> replacements;
    SmallVector<func::FuncOp> duplicates;
    for (func::FuncOp function : module.getOps<func::FuncOp>()) {
      if (!function.isPrivate() || function.isExternal())
        continue;
      dropModulePaths(function);
      auto [it, inserted] =
          firstOfKind.try_emplace(printWithoutName(function), function);
      if (inserted)
        continue;
      replacements[function.getSymNameAttr()] =
          FlatSymbolRefAttr::get(it->second.getSymNameAttr());
      duplicates.push_back(function);
    }
    if (duplicates.empty())
      return;
    module.walk([&](func::CallOp call) {
      auto replacement = replacements.find(call.getCalleeAttr().getAttr());
      if (replacement != replacements.end())
        call.setCalleeAttr(replacement->second);
    });
    // A duplicate still referred to (otherwise than by a call) stays; the
    // uses are collected in one walk.
    DenseSet<StringAttr> used;
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(module))
      for (const SymbolTable::SymbolUse &use : *uses)
        used.insert(use.getSymbolRef().getRootReference());
    for (func::FuncOp duplicate : duplicates)
      if (!used.contains(duplicate.getSymNameAttr()))
        duplicate.erase();
  }
};

} // namespace
