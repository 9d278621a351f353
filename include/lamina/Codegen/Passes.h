//===- Passes.h - Code generation on linalg, vector, memref -----*- C++ -*-===//

#ifndef LAMINA_CODEGEN_PASSES_H
#define LAMINA_CODEGEN_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::lamina {

/// The prefix of the C interfaces func-to-llvm writes for
/// `llvm.emit_c_interface` functions: `_mlir_ciface_<function>`, the
/// host's way into a compiled program.
inline constexpr llvm::StringLiteral kCInterfacePrefix = "_mlir_ciface_";

#define GEN_PASS_DECL
#include "lamina/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lamina/Codegen/Passes.h.inc"

} // namespace mlir::lamina

#endif // LAMINA_CODEGEN_PASSES_H
