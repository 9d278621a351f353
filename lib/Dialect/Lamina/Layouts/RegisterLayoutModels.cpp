//===- RegisterLayoutModels.cpp - Every dialect's layout rules ------------===//

#include "LayoutModels.h"

void mlir::lamina::registerLayoutModels(DialectRegistry &registry) {
  detail::registerLaminaLayoutModels(registry);
  detail::registerTensorLayoutModels(registry);
  detail::registerLinalgLayoutModels(registry);
}
