//===- ParseModule.cpp - Parse and verify a module, safely ---------------===//

#include "lamina/Support/ParseModule.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

/// gpu.func and gpu.launch read their workgroup attributions as the
/// `workgroup_attributions` leading arguments after the inputs, unchecked:
/// a count out of range makes their verifiers read past the arguments.
static LogicalResult checkWorkgroupAttributions(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name != "gpu.func" && name != "gpu.launch")
    return success();
  Attribute count = op->getAttr("workgroup_attributions");
  if (!count)
    return success();
  auto integer = dyn_cast<IntegerAttr>(count);
  if (!integer || !integer.getType().isSignlessInteger(64))
    return op->emitOpError("workgroup_attributions must be an i64 count");
  int64_t numArguments = 0, numInputs = 0;
  if (op->getNumRegions() && !op->getRegion(0).empty())
    numArguments = op->getRegion(0).front().getNumArguments();
  if (auto type = dyn_cast_or_null<TypeAttr>(
          op->getInherentAttr("function_type").value_or(Attribute())))
    if (auto function = dyn_cast<FunctionType>(type.getValue()))
      numInputs = function.getNumInputs();
  int64_t available = numArguments - numInputs;
  if (integer.getInt() < 0 || integer.getInt() > available)
    return op->emitOpError("workgroup_attributions = ")
           << integer.getInt() << " does not count arguments of its body: "
           << std::max<int64_t>(available, 0) << " follow its inputs";
  return success();
}

/// An empty symbol name verifies, but prints as `@<<INVALID EMPTY SYMBOL>>`,
/// which no parser reads back.
static LogicalResult checkSymbolName(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
  if (name && name.getValue().empty())
    return op->emitOpError("has an empty symbol name");
  return success();
}

LogicalResult mlir::lamina::checkUpstreamVerifierHazards(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    return failed(checkWorkgroupAttributions(op)) || failed(checkSymbolName(op))
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult mlir::lamina::verifyGuarded(Operation *root) {
  if (failed(checkUpstreamVerifierHazards(root)))
    return failure();
  return verify(root);
}

static OwningOpRef<ModuleOp> verified(OwningOpRef<ModuleOp> module) {
  if (!module || failed(mlir::lamina::verifyGuarded(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> mlir::lamina::parseVerifiedModule(StringRef text,
                                                        MLIRContext *context,
                                                        StringRef sourceName) {
  // The lexer reads the byte after the text, expecting a NUL; a StringRef
  // (a slice, a fuzzer's buffer) promises none, so the text is copied.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, sourceName), llvm::SMLoc());
  return parseVerifiedModule(sourceMgr, context);
}

OwningOpRef<ModuleOp>
mlir::lamina::parseVerifiedModule(llvm::SourceMgr &sourceMgr,
                                  MLIRContext *context) {
  ParserConfig config(context, /*verifyAfterParse=*/false);
  return verified(parseSourceFile<ModuleOp>(sourceMgr, config));
}
