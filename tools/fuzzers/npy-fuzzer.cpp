//===- npy-fuzzer.cpp - The .npy reader
//------------------------------------===//
//
// Any bytes: a tensor whose payload matches its header, or an error.
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "lamina/Execution/HostTensor.h"

using namespace mlir::lamina::fuzz;
using namespace mlir::lamina;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<HostTensor> tensor = parseNpy(asText(data, size), "input.npy");
  if (!tensor) {
    std::string message = llvm::toString(tensor.takeError());
    if (message.empty())
      reportBug("a rejected .npy file without a message");
    return 0;
  }
  size_t bytes = getElementSize(tensor->kind) * tensor->getNumElements();
  if (tensor->bytes.size() != bytes)
    reportBug("a tensor of " + llvm::Twine(tensor->getNumElements()) +
              " elements holds " + llvm::Twine(tensor->bytes.size()) +
              " bytes");
  // Every element converts.
  double sum = 0;
  for (int64_t i = 0, e = tensor->getNumElements(); i < e; ++i)
    sum += tensor->getAsDouble(i);
  (void)sum;
  return 0;
}
