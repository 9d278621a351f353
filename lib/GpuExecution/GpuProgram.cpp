//===- GpuProgram.cpp - Ahead-of-time GPU artefacts called from C++ -------===//

#include "lamina/Execution/GpuProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <dlfcn.h>

using namespace mlir;
using namespace mlir::lamina;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(std::errc::invalid_argument,
                                 message.str().c_str());
}

llvm::Expected<std::unique_ptr<GpuProgram>>
GpuProgram::compile(OwningOpRef<ModuleOp> module, StringRef entryName,
                    const GpuArtefactOptions &options) {
  auto function = module->lookupSymbol<func::FuncOp>(entryName);
  if (!function)
    return error("no function @" + entryName + " in the module");
  std::unique_ptr<GpuProgram> program(new GpuProgram());
  for (auto [i, type] : llvm::enumerate(function.getArgumentTypes())) {
    auto spec = describeHostValue(type, "argument " + std::to_string(i));
    if (!spec)
      return spec.takeError();
    program->inputs.push_back(*spec);
  }
  for (auto [i, type] : llvm::enumerate(function.getResultTypes())) {
    auto spec = describeHostValue(type, "result " + std::to_string(i));
    if (!spec)
      return spec.takeError();
    if (spec->isScalar)
      return error("GPU entry points return tensors; result " + llvm::Twine(i) +
                   " is " + spec->typeText);
    program->results.push_back(*spec);
  }

  SmallString<128> directory;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("lamina-run", directory))
    return error("cannot create a temporary directory: " + ec.message());
  program->directory = std::string(directory);
  SmallString<128> libraryPath(directory);
  llvm::sys::path::append(libraryPath, "libprogram.so");
  if (llvm::Error failed = buildGpuArtefact(*module, options, libraryPath))
    return std::move(failed);

  program->library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!program->library)
    return error("cannot load the GPU artefact: " + llvm::Twine(dlerror()));
  auto symbol = [&](const std::string &name) {
    return dlsym(program->library, name.c_str());
  };
  auto init = reinterpret_cast<const char *(*)()>(symbol("laminaCudaInit"));
  if (const char *reason = init ? init() : "the artefact has no runtime")
    return error("no usable GPU: " + llvm::Twine(reason));
  program->entry =
      reinterpret_cast<void (*)(void **)>(symbol("_mlir_" + entryName.str()));
  program->memAlloc =
      reinterpret_cast<decltype(program->memAlloc)>(symbol("mgpuMemAlloc"));
  program->memFree =
      reinterpret_cast<decltype(program->memFree)>(symbol("mgpuMemFree"));
  program->memcpy =
      reinterpret_cast<decltype(program->memcpy)>(symbol("mgpuMemcpy"));
  program->streamSynchronize =
      reinterpret_cast<decltype(program->streamSynchronize)>(
          symbol("mgpuStreamSynchronize"));
  if (!program->entry || !program->memAlloc || !program->memFree ||
      !program->memcpy || !program->streamSynchronize)
    return error("the GPU artefact lacks _mlir_" + entryName +
                 " or the mgpu memory functions");
  return program;
}

GpuProgram::~GpuProgram() {
  // The library stays loaded: its kernel modules unload at exit.
  if (!directory.empty())
    llvm::sys::fs::remove_directories(directory);
}

namespace {
/// A device buffer and the memref descriptor that points at it.
struct DeviceTensor {
  void *data = nullptr;
  size_t bytes = 0;
  std::vector<int64_t> descriptor; // {alloc, aligned, offset, sizes, strides}
  void *descriptorAddress = nullptr;

  DeviceTensor(void *data, size_t bytes, ArrayRef<int64_t> shape)
      : data(data), bytes(bytes) {
    descriptor = {reinterpret_cast<int64_t>(data),
                  reinterpret_cast<int64_t>(data), 0};
    descriptor.insert(descriptor.end(), shape.begin(), shape.end());
    SmallVector<int64_t> strides(shape.size(), 1);
    for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    descriptor.insert(descriptor.end(), strides.begin(), strides.end());
    descriptorAddress = descriptor.data();
  }
};
} // namespace

llvm::Expected<std::vector<HostTensor>>
GpuProgram::run(ArrayRef<HostTensor> args) const {
  if (args.size() != inputs.size())
    return error("the entry point takes " + llvm::Twine(inputs.size()) +
                 " arguments, " + llvm::Twine(args.size()) + " given");
  // Addresses in `packed` point into `tensors` and `args`: reserve first.
  std::vector<DeviceTensor> tensors;
  tensors.reserve(args.size() + results.size());
  SmallVector<void *> packed;
  auto upload = [&](const HostTensor &host, bool copy) {
    size_t bytes = host.bytes.size();
    void *data = memAlloc(bytes, nullptr, false);
    if (copy && bytes)
      memcpy(data, const_cast<uint8_t *>(host.bytes.data()), bytes, nullptr);
    tensors.emplace_back(data, bytes, host.shape);
    packed.push_back(&tensors.back().descriptorAddress);
  };
  for (auto [spec, arg] : llvm::zip(inputs, args)) {
    if (arg.kind != spec.kind || (!spec.isScalar && arg.shape != spec.shape))
      return error("an argument does not match " + spec.typeText);
    if (spec.isScalar)
      packed.push_back(const_cast<uint8_t *>(arg.bytes.data()));
    else
      upload(arg, /*copy=*/true);
  }
  std::vector<HostTensor> outputs;
  for (const ArgumentSpec &spec : results) {
    llvm::Expected<HostTensor> output = HostTensor::zeros(spec.kind, spec.shape);
    if (!output)
      return output.takeError();
    outputs.push_back(std::move(*output));
    upload(outputs.back(), /*copy=*/false);
  }
  entry(packed.data());
  size_t firstResult = tensors.size() - results.size();
  for (auto [i, output] : llvm::enumerate(outputs))
    if (!output.bytes.empty())
      memcpy(output.bytes.data(), tensors[firstResult + i].data,
             output.bytes.size(), nullptr);
  streamSynchronize(nullptr);
  for (DeviceTensor &tensor : tensors)
    memFree(tensor.data, nullptr);
  return outputs;
}
