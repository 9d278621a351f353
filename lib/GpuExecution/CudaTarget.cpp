//===- CudaTarget.cpp - Programs on NVIDIA GPUs ---------------------------===//

#include "lamina/Execution/CudaTarget.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <dlfcn.h>

using namespace mlir;
using namespace mlir::lamina;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(std::errc::invalid_argument,
                                 message.str().c_str());
}

char NoUsableGpuError::ID;

namespace {
/// A GPU artefact loaded into this process; its memory is the GPU's,
/// through the mgpu functions of Lamina's CUDA runtime linked into it.
class GpuExecutable : public Executable {
public:
  ~GpuExecutable() override {
    // The library stays loaded: its kernel modules unload at exit.
    if (!directory.empty())
      llvm::sys::fs::remove_directories(directory);
  }

  static llvm::Expected<std::unique_ptr<GpuExecutable>>
  load(std::string directory, llvm::StringRef libraryPath,
       llvm::ArrayRef<std::string> functions);

  llvm::Error call(llvm::StringRef function, llvm::ArrayRef<CallValue> args,
                   llvm::ArrayRef<CallValue> outputs) override;
  llvm::Error callResident(llvm::StringRef function,
                           llvm::ArrayRef<CallValue> args,
                           llvm::ArrayRef<CallValue> outputs,
                           void *stream) override;

private:
  using PackedFunction = void (*)(void **);
  llvm::Expected<PackedFunction> lookup(llvm::StringRef function) const;

  std::string directory;
  void *library = nullptr;
  llvm::StringMap<PackedFunction> functions;
  void *(*memAlloc)(uint64_t, void *, bool) = nullptr;
  void (*memFree)(void *, void *) = nullptr;
  void (*memcpy)(void *, void *, size_t, void *) = nullptr;
  void (*streamSynchronize)(void *) = nullptr;
  void (*useStream)(void *) = nullptr;
};
} // namespace

llvm::Expected<std::unique_ptr<GpuExecutable>>
GpuExecutable::load(std::string directory, llvm::StringRef libraryPath,
                    llvm::ArrayRef<std::string> functions) {
  std::unique_ptr<GpuExecutable> code(new GpuExecutable());
  code->directory = std::move(directory);
  code->library = dlopen(libraryPath.str().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!code->library)
    return error("cannot load the GPU artefact: " + llvm::Twine(dlerror()));
  auto symbol = [&](const llvm::Twine &name) {
    return dlsym(code->library, name.str().c_str());
  };
  auto init = reinterpret_cast<const char *(*)()>(symbol("laminaCudaInit"));
  if (const char *reason = init ? init() : "the artefact has no runtime")
    return llvm::make_error<NoUsableGpuError>(reason);
  for (const std::string &function : functions) {
    auto *entry = reinterpret_cast<PackedFunction>(symbol("_mlir_" + function));
    if (!entry)
      return error("the GPU artefact lacks _mlir_" + function);
    code->functions[function] = entry;
  }
  code->memAlloc =
      reinterpret_cast<decltype(code->memAlloc)>(symbol("mgpuMemAlloc"));
  code->memFree =
      reinterpret_cast<decltype(code->memFree)>(symbol("mgpuMemFree"));
  code->memcpy = reinterpret_cast<decltype(code->memcpy)>(symbol("mgpuMemcpy"));
  code->streamSynchronize =
      reinterpret_cast<decltype(code->streamSynchronize)>(
          symbol("mgpuStreamSynchronize"));
  code->useStream = reinterpret_cast<decltype(code->useStream)>(
      symbol("laminaCudaUseStream"));
  if (!code->memAlloc || !code->memFree || !code->memcpy ||
      !code->streamSynchronize || !code->useStream)
    return error("the GPU artefact lacks the mgpu memory functions or "
                 "laminaCudaUseStream");
  return code;
}

llvm::Expected<GpuExecutable::PackedFunction>
GpuExecutable::lookup(llvm::StringRef function) const {
  auto found = functions.find(function);
  if (found == functions.end())
    return error("the program has no function '" + function + "'");
  return found->second;
}

llvm::Error GpuExecutable::call(llvm::StringRef function,
                                llvm::ArrayRef<CallValue> args,
                                llvm::ArrayRef<CallValue> outputs) {
  auto entry = lookup(function);
  if (!entry)
    return entry.takeError();
  // The same values, each tensor in a device buffer of its own.
  SmallVector<CallValue> onDevice;
  auto upload = [&](const CallValue &value, bool copy) {
    CallValue device = value;
    if (!value.isScalar) {
      device.data = memAlloc(value.bytes, nullptr, false);
      if (copy && value.bytes)
        memcpy(device.data, value.data, value.bytes, nullptr);
    }
    onDevice.push_back(device);
  };
  for (const CallValue &arg : args)
    upload(arg, /*copy=*/true);
  for (const CallValue &output : outputs)
    upload(output, /*copy=*/false);
  PackedCall packed(onDevice);
  (*entry)(packed.getArguments());
  for (auto [output, device] :
       llvm::zip_equal(outputs, llvm::ArrayRef(onDevice).take_back(
                                    outputs.size())))
    if (output.bytes)
      memcpy(output.data, device.data, output.bytes, nullptr);
  streamSynchronize(nullptr);
  for (const CallValue &device : onDevice)
    if (!device.isScalar)
      memFree(device.data, nullptr);
  return llvm::Error::success();
}

llvm::Error GpuExecutable::callResident(llvm::StringRef function,
                                        llvm::ArrayRef<CallValue> args,
                                        llvm::ArrayRef<CallValue> outputs,
                                        void *stream) {
  auto entry = lookup(function);
  if (!entry)
    return entry.takeError();
  SmallVector<CallValue> values(args);
  values.append(outputs.begin(), outputs.end());
  PackedCall packed(values);
  useStream(stream);
  (*entry)(packed.getArguments());
  useStream(nullptr);
  return llvm::Error::success();
}

llvm::Error CudaTarget::lower(ModuleOp module, TimingScope &timing) const {
  TimingScope scope = timing.nest("lamina-gpu-pipeline");
  return lowerGpuArtefact(module, options);
}

llvm::Expected<std::unique_ptr<Executable>>
CudaTarget::build(ModuleOp module, llvm::ArrayRef<std::string> functions,
                  bool keepObject, TimingScope &timing) const {
  TimingScope scope = timing.nest("GPU artefact: fatbins, host code, link");
  SmallString<128> directory;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("lamina-program", directory))
    return error("cannot create a temporary directory: " + ec.message());
  SmallString<128> libraryPath(directory);
  llvm::sys::path::append(libraryPath, "libprogram.so");
  if (llvm::Error failed = linkGpuArtefact(module, options, libraryPath)) {
    llvm::sys::fs::remove_directories(directory);
    return std::move(failed);
  }
  return GpuExecutable::load(std::string(directory), libraryPath, functions);
}
