//===- Executable.cpp - A program's code on one target ---------------------===//

#include "lamina/Execution/Executable.h"

#include "lamina/Execution/NativeCode.h"
#include "lamina/Execution/Program.h"

using namespace mlir;
using namespace mlir::lamina;

PackedCall::PackedCall(llvm::ArrayRef<CallValue> values) {
  // Addresses into the vectors are taken as they grow: reserve first.
  descriptors.reserve(values.size());
  descriptorAddresses.reserve(values.size());
  packed.reserve(values.size());
  for (const CallValue &value : values) {
    if (value.isScalar) {
      packed.push_back(value.data);
      continue;
    }
    auto pointer = static_cast<int64_t>(reinterpret_cast<intptr_t>(value.data));
    std::vector<int64_t> &words = descriptors.emplace_back();
    words = {pointer, pointer, 0};
    words.insert(words.end(), value.shape.begin(), value.shape.end());
    std::vector<int64_t> strides(value.shape.size(), 1);
    for (int64_t d = int64_t(value.shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * value.shape[d + 1];
    words.insert(words.end(), strides.begin(), strides.end());
    descriptorAddresses.push_back(words.data());
    packed.push_back(&descriptorAddresses.back());
  }
}

Executable::~Executable() = default;

ProgramTarget::~ProgramTarget() = default;

llvm::Expected<std::unique_ptr<Executable>>
ProgramTarget::load(llvm::MemoryBufferRef, bool,
                    llvm::ArrayRef<std::string>) const {
  return llvm::createStringError("the %s target keeps no compiled code",
                                 getName().str().c_str());
}

llvm::Error CpuTarget::lower(ModuleOp module, TimingScope &timing) const {
  return runPassPipeline(module, pipeline, &timing);
}

llvm::Expected<std::unique_ptr<Executable>>
CpuTarget::build(ModuleOp module, llvm::ArrayRef<std::string> functions,
                 bool keepObject, TimingScope &timing) const {
  return NativeCode::compile(module, functions, keepObject, timing);
}

llvm::Expected<std::unique_ptr<Executable>>
CpuTarget::load(llvm::MemoryBufferRef object, bool usesOpenMP,
                llvm::ArrayRef<std::string> functions) const {
  return NativeCode::load(object, usesOpenMP, functions);
}
