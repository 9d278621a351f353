//===- InitializeHarness.cpp - The LLVMFuzzerInitialize of IR harnesses ---===//
//
// Linked into the harnesses that need no setup beyond registration.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mlir::lamina::fuzz::initialize();
  return 0;
}
