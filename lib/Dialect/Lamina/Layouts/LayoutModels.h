//===- LayoutModels.h - Layout rules per dialect ----------------*- C++ -*-===//
//
// The registration of each dialect's LayoutOpInterface models, one file per
// dialect; registerLayoutModels attaches them all.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_DIALECT_LAMINA_LAYOUTS_LAYOUTMODELS_H
#define LAMINA_LIB_DIALECT_LAMINA_LAYOUTS_LAYOUTMODELS_H

#include "lamina/Lamina/IR/LaminaLayoutInterface.h"

namespace mlir::lamina::detail {
/// The base of a model of `Op`'s layout rules.
template <typename Model, typename Op>
using Rules = LayoutOpInterface::ExternalModel<Model, Op>;

void registerLaminaLayoutModels(DialectRegistry &registry);
void registerTensorLayoutModels(DialectRegistry &registry);
void registerLinalgLayoutModels(DialectRegistry &registry);
} // namespace mlir::lamina::detail

#endif // LAMINA_LIB_DIALECT_LAMINA_LAYOUTS_LAYOUTMODELS_H
