//===- Passes.h - Transformations of the lns dialect ------------*- C++ -*-===//

#ifndef LAMINA_LNS_TRANSFORMS_PASSES_H
#define LAMINA_LNS_TRANSFORMS_PASSES_H

#include "lamina/Lns/IR/Lns.h"

#include "mlir/Pass/Pass.h"

namespace mlir::lamina::lns {

#define GEN_PASS_DECL
#include "lamina/Lns/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lamina/Lns/Transforms/Passes.h.inc"

} // namespace mlir::lamina::lns

#endif // LAMINA_LNS_TRANSFORMS_PASSES_H
