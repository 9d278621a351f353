//===- InternalizeFunctions.cpp - Internal linkage behind the C interfaces ===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAINTERNALIZEFUNCTIONS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaInternalizeFunctionsPass
    : mlir::lamina::impl::LaminaInternalizeFunctionsBase<
          LaminaInternalizeFunctionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> wrapped;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (!function.isExternal() &&
          function.getName().starts_with(kCInterfacePrefix))
        wrapped.insert(function.getName().drop_front(kCInterfacePrefix.size()));
    for (auto function : module.getOps<LLVM::LLVMFuncOp>()) {
      if (function.isExternal())
        continue;
      // A public function without a C interface is an entry of its own
      // (a module compiled ahead of time by lamina-opt's user).
      bool isWrapped = wrapped.contains(function.getName());
      if (!isWrapped && !function.isPrivate())
        continue;
      function.setLinkage(LLVM::Linkage::Internal);
      // Out of line: inlined, the C interface became one function of the
      // whole host code and its descriptor loads, twice as slow to generate.
      if (isWrapped)
        function.setNoInline(true);
    }
  }
};
} // namespace
