//===- lamina-opt.cpp - Lamina's opt-style driver -------------------------===//

#include "lamina/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::lamina::registerAllDialects(registry);
  mlir::lamina::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Lamina optimizer driver\n", registry));
}
