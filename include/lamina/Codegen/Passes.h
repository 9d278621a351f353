//===- Passes.h - Code generation on linalg, vector, memref -----*- C++ -*-===//

#ifndef LAMINA_CODEGEN_PASSES_H
#define LAMINA_CODEGEN_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::lamina {

#define GEN_PASS_DECL
#include "lamina/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lamina/Codegen/Passes.h.inc"

} // namespace mlir::lamina

#endif // LAMINA_CODEGEN_PASSES_H
