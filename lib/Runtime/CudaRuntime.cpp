//===- CudaRuntime.cpp - mgpu* over the CUDA driver API, via dlopen -------===//

#include "lamina/Runtime/CudaRuntime.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {
//===----------------------------------------------------------------------===//
// The driver API subset, declared here so that no CUDA header is needed.
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

/// CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};

constexpr int kFuncAttributeMaxDynamicSharedBytes = 8;
constexpr int kJitOptimizationLevel = 7;
constexpr unsigned kMemAttachGlobal = 1;
constexpr int kStaticSharedLimit = 48 * 1024;

/// Entry points resolved from libcuda.so.1, by their ABI names.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void *);
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuTensorMapEncodeTiled)(TensorMap *, int, unsigned, void *,
                                     const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int,
                                     int, int, int);
};

struct State {
  Driver driver{};
  CUcontext context = nullptr;
  int device = 0;
  std::once_flag initialisation;
  std::atomic<bool> initialised{false};
  std::string failure; // empty once initialised successfully
  CUstream userStream = nullptr;
  std::mutex tensorMapsMutex;
  std::map<std::vector<int64_t>, CUdeviceptr> tensorMaps;
};

/// Never destroyed: module destructors of generated code run at exit.
State &state() {
  static State *instance = new State;
  return *instance;
}

template <typename Fn>
bool resolve(void *library, const char *name, Fn &slot, std::string &error) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot)
    error = std::string("libcuda.so.1 has no ") + name;
  return slot != nullptr;
}

std::string describe(CUresult result) {
  const char *text = nullptr;
  if (state().driver.cuGetErrorString)
    state().driver.cuGetErrorString(result, &text);
  return std::string(text ? text : "unknown error") + " (CUresult " +
         std::to_string(result) + ")";
}

/// Opens the driver and retains the device's primary context (shared with
/// the CUDA runtime, e.g. PyTorch, so device pointers mix freely).
std::string initialise(State &s) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return std::string("cannot load the CUDA driver (libcuda.so.1): ") +
           dlerror();
  Driver &d = s.driver;
  std::string error;
  bool ok =
      resolve(library, "cuInit", d.cuInit, error) &&
      resolve(library, "cuDeviceGetCount", d.cuDeviceGetCount, error) &&
      resolve(library, "cuDeviceGet", d.cuDeviceGet, error) &&
      resolve(library, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain,
              error) &&
      resolve(library, "cuCtxSetCurrent", d.cuCtxSetCurrent, error) &&
      resolve(library, "cuGetErrorString", d.cuGetErrorString, error) &&
      resolve(library, "cuModuleLoadData", d.cuModuleLoadData, error) &&
      resolve(library, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, error) &&
      resolve(library, "cuModuleUnload", d.cuModuleUnload, error) &&
      resolve(library, "cuModuleGetFunction", d.cuModuleGetFunction, error) &&
      resolve(library, "cuFuncSetAttribute", d.cuFuncSetAttribute, error) &&
      resolve(library, "cuLaunchKernel", d.cuLaunchKernel, error) &&
      resolve(library, "cuStreamCreate", d.cuStreamCreate, error) &&
      resolve(library, "cuStreamDestroy_v2", d.cuStreamDestroy, error) &&
      resolve(library, "cuStreamSynchronize", d.cuStreamSynchronize, error) &&
      resolve(library, "cuStreamWaitEvent", d.cuStreamWaitEvent, error) &&
      resolve(library, "cuEventCreate", d.cuEventCreate, error) &&
      resolve(library, "cuEventDestroy_v2", d.cuEventDestroy, error) &&
      resolve(library, "cuEventSynchronize", d.cuEventSynchronize, error) &&
      resolve(library, "cuEventRecord", d.cuEventRecord, error) &&
      resolve(library, "cuMemAlloc_v2", d.cuMemAlloc, error) &&
      resolve(library, "cuMemAllocManaged", d.cuMemAllocManaged, error) &&
      resolve(library, "cuMemFree_v2", d.cuMemFree, error) &&
      resolve(library, "cuMemcpyAsync", d.cuMemcpyAsync, error) &&
      resolve(library, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, error) &&
      resolve(library, "cuMemsetD32Async", d.cuMemsetD32Async, error) &&
      resolve(library, "cuMemsetD16Async", d.cuMemsetD16Async, error) &&
      resolve(library, "cuMemHostRegister_v2", d.cuMemHostRegister, error) &&
      resolve(library, "cuMemHostUnregister", d.cuMemHostUnregister, error);
  if (!ok)
    return error;
  // Stream-ordered allocation (CUDA 11.2+): optional.
  d.cuMemAllocAsync = reinterpret_cast<decltype(d.cuMemAllocAsync)>(
      dlsym(library, "cuMemAllocAsync"));
  d.cuMemFreeAsync = reinterpret_cast<decltype(d.cuMemFreeAsync)>(
      dlsym(library, "cuMemFreeAsync"));
  // Hopper only; absent from older drivers, needed by TMA kernels alone.
  d.cuTensorMapEncodeTiled =
      reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(
          dlsym(library, "cuTensorMapEncodeTiled"));

  if (CUresult r = d.cuInit(0))
    return "cuInit failed: " + describe(r);
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count))
    return "cannot count CUDA devices: " + describe(r);
  if (count == 0)
    return "the CUDA driver reports no GPU";
  if (s.device >= count)
    return "GPU " + std::to_string(s.device) +
           " requested, but the driver "
           "reports " +
           std::to_string(count);
  CUdevice device;
  if (CUresult r = d.cuDeviceGet(&device, s.device))
    return "cuDeviceGet failed: " + describe(r);
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&s.context, device))
    return "cannot retain the primary context: " + describe(r);
  return "";
}

/// Initialises the driver once, on first use from any thread; returns why
/// no GPU can be used, or an empty string.
const std::string &initialisationFailure() {
  State &s = state();
  std::call_once(s.initialisation, [&] {
    s.failure = initialise(s);
    s.initialised = true;
  });
  return s.failure;
}

/// The initialised driver with the context current on this thread; a
/// missing driver or device is fatal here, since generated code has no
/// error path (laminaCudaInit reports it without aborting).
Driver &driver() {
  if (const std::string &failure = initialisationFailure(); !failure.empty()) {
    std::fprintf(stderr, "lamina: no usable GPU: %s\n", failure.c_str());
    std::exit(EXIT_FAILURE);
  }
  State &s = state();
  thread_local bool current = false;
  if (!current) {
    s.driver.cuCtxSetCurrent(s.context);
    current = true;
  }
  return s.driver;
}

void check(CUresult result, const char *what) {
  if (result == 0)
    return;
  std::fprintf(stderr, "lamina: CUDA error in %s: %s\n", what,
               describe(result).c_str());
  std::exit(EXIT_FAILURE);
}

CUstream streamOf(void *stream) {
  CUstream user = state().userStream;
  return user ? user : static_cast<CUstream>(stream);
}

size_t elementBytes(int64_t dataType) {
  // CUtensorMapDataType: u8, u16, u32, i32, u64, i64, f16, f32, f64, bf16,
  // f32 ftz, tf32, tf32 ftz.
  static constexpr std::array<size_t, 13> sizes = {1, 2, 4, 4, 8, 8, 2,
                                                   4, 8, 2, 4, 4, 4};
  if (dataType < 0 || dataType >= static_cast<int64_t>(sizes.size())) {
    std::fprintf(stderr, "lamina: unknown tensor map data type %lld\n",
                 static_cast<long long>(dataType));
    std::exit(EXIT_FAILURE);
  }
  return sizes[dataType];
}
} // namespace

//===----------------------------------------------------------------------===//
// Lamina's entry points
//===----------------------------------------------------------------------===//

extern "C" const char *laminaCudaInit() {
  const std::string &failure = initialisationFailure();
  return failure.empty() ? nullptr : failure.c_str();
}

extern "C" void laminaCudaUseStream(void *stream) {
  state().userStream = static_cast<CUstream>(stream);
}

//===----------------------------------------------------------------------===//
// Modules and launches
//===----------------------------------------------------------------------===//

extern "C" void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  // Generated code loads its kernels when the program is loaded; without a
  // GPU, loading still succeeds and the first launch reports why.
  if (laminaCudaInit())
    return nullptr;
  CUmodule module = nullptr;
  check(driver().cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

extern "C" void *mgpuModuleLoadJIT(void *data, int optLevel) {
  CUmodule module = nullptr;
  int options[] = {kJitOptimizationLevel};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  check(driver().cuModuleLoadDataEx(&module, data, 1, options, values),
        "cuModuleLoadDataEx (PTX JIT)");
  return module;
}

extern "C" void mgpuModuleUnload(void *module) {
  if (!module)
    return;
  check(driver().cuModuleUnload(static_cast<CUmodule>(module)),
        "cuModuleUnload");
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction function = nullptr;
  check(driver().cuModuleGetFunction(&function, static_cast<CUmodule>(module),
                                     name),
        "cuModuleGetFunction");
  return function;
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ, int32_t smem,
                                 void *stream, void **params, void **extra,
                                 size_t /*paramsCount*/) {
  Driver &d = driver();
  auto fn = static_cast<CUfunction>(function);
  // Beyond 48 KiB, dynamic shared memory must be opted into per kernel.
  if (smem > kStaticSharedLimit)
    check(d.cuFuncSetAttribute(fn, kFuncAttributeMaxDynamicSharedBytes, smem),
          "cuFuncSetAttribute (dynamic shared memory)");
  check(d.cuLaunchKernel(fn, gridX, gridY, gridZ, blockX, blockY, blockZ, smem,
                         streamOf(stream), params, extra),
        "cuLaunchKernel");
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

extern "C" void *mgpuStreamCreate() {
  if (CUstream user = state().userStream)
    return user;
  CUstream stream = nullptr;
  check(driver().cuStreamCreate(&stream, 0), "cuStreamCreate");
  return stream;
}

extern "C" void mgpuStreamDestroy(void *stream) {
  if (stream == state().userStream)
    return;
  check(driver().cuStreamDestroy(static_cast<CUstream>(stream)),
        "cuStreamDestroy");
}

extern "C" void mgpuStreamSynchronize(void *stream) {
  // Stream-ordered mode: the framework synchronises.
  if (state().userStream)
    return;
  check(driver().cuStreamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize");
}

extern "C" void mgpuStreamWaitEvent(void *stream, void *event) {
  check(driver().cuStreamWaitEvent(streamOf(stream),
                                   static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

extern "C" void *mgpuEventCreate() {
  CUevent event = nullptr;
  check(driver().cuEventCreate(&event, 0), "cuEventCreate");
  return event;
}

extern "C" void mgpuEventDestroy(void *event) {
  check(driver().cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

extern "C" void mgpuEventSynchronize(void *event) {
  check(driver().cuEventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize");
}

extern "C" void mgpuEventRecord(void *event, void *stream) {
  check(driver().cuEventRecord(static_cast<CUevent>(event), streamOf(stream)),
        "cuEventRecord");
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

extern "C" void *mgpuMemAlloc(uint64_t sizeBytes, void *stream,
                              bool isHostShared) {
  Driver &d = driver();
  CUdeviceptr ptr = 0;
  if (sizeBytes == 0)
    return nullptr;
  if (isHostShared)
    check(d.cuMemAllocManaged(&ptr, sizeBytes, kMemAttachGlobal),
          "cuMemAllocManaged");
  else if (state().userStream && d.cuMemAllocAsync)
    // Stream-ordered mode: temporaries come from the stream's pool, with
    // no device-wide synchronisation.
    check(d.cuMemAllocAsync(&ptr, sizeBytes, streamOf(stream)),
          "cuMemAllocAsync");
  else
    check(d.cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

extern "C" void mgpuMemFree(void *ptr, void *stream) {
  Driver &d = driver();
  if (!ptr)
    return;
  if (state().userStream && d.cuMemFreeAsync)
    check(
        d.cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), streamOf(stream)),
        "cuMemFreeAsync");
  else
    check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                           void *stream) {
  check(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                               reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                               streamOf(stream)),
        "cuMemcpyAsync");
}

extern "C" void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             void *stream) {
  check(driver().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                  count, streamOf(stream)),
        "cuMemsetD32Async");
}

extern "C" void mgpuMemset16(void *dst, unsigned short value, size_t count,
                             void *stream) {
  check(driver().cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                  count, streamOf(stream)),
        "cuMemsetD16Async");
}

extern "C" void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  check(driver().cuMemHostRegister(ptr, sizeBytes, 0), "cuMemHostRegister");
}

extern "C" void mgpuMemHostUnregister(void *ptr) {
  check(driver().cuMemHostUnregister(ptr), "cuMemHostUnregister");
}

namespace {
/// A ranked memref descriptor: {allocated, aligned, offset, sizes[rank],
/// strides[rank]}, all pointer-sized words.
struct MemRefView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;

  MemRefView(void *descriptor, int64_t rank) {
    auto *words = static_cast<int64_t *>(descriptor);
    aligned = reinterpret_cast<char *>(words[1]);
    offset = words[2];
    sizes = words + 3;
    strides = words + 3 + rank;
  }
  char *data(int64_t elementBytes) const {
    return aligned + offset * elementBytes;
  }
  int64_t numElements(int64_t rank) const {
    int64_t n = 1;
    for (int64_t d = 0; d < rank; ++d)
      n *= sizes[d];
    return n;
  }
};
} // namespace

extern "C" void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                          int64_t elementSizeBytes) {
  MemRefView view(descriptor, rank);
  mgpuMemHostRegister(view.data(elementSizeBytes),
                      view.numElements(rank) * elementSizeBytes);
}

extern "C" void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                            int64_t elementSizeBytes) {
  mgpuMemHostUnregister(MemRefView(descriptor, rank).data(elementSizeBytes));
}

extern "C" void mgpuSetDefaultDevice(int32_t device) {
  // Only before the first GPU call: the context is the device's from then.
  State &s = state();
  if (!s.initialised)
    s.device = device;
}

//===----------------------------------------------------------------------===//
// TMA descriptors
//===----------------------------------------------------------------------===//

extern "C" void *mgpuTensorMapEncodeTiledMemref(
    int64_t rank, void *descriptor, int64_t dataType, int64_t interleave,
    int64_t swizzle, int64_t l2Promotion, int64_t oobFill, int64_t *boxDims) {
  constexpr int64_t kMaxRank = 5;
  if (rank < 1 || rank > kMaxRank) {
    std::fprintf(stderr, "lamina: TMA descriptors have rank 1 to 5, not %lld\n",
                 static_cast<long long>(rank));
    std::exit(EXIT_FAILURE);
  }
  Driver &d = driver();
  if (!d.cuTensorMapEncodeTiled) {
    std::fprintf(stderr, "lamina: this CUDA driver has no "
                         "cuTensorMapEncodeTiled (TMA needs CUDA 12+)\n");
    std::exit(EXIT_FAILURE);
  }
  MemRefView view(descriptor, rank);
  size_t elementSize = elementBytes(dataType);
  char *base = view.data(elementSize);

  // The driver wants everything innermost-first, strides in bytes.
  uint64_t dims[kMaxRank], strides[kMaxRank];
  unsigned box[kMaxRank], elementStrides[kMaxRank];
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = rank - 1 - i;
    dims[i] = view.sizes[d];
    strides[i] = view.strides[d] * elementSize;
    box[i] = static_cast<unsigned>(boxDims[d]);
    elementStrides[i] = 1;
  }

  std::vector<int64_t> key = {reinterpret_cast<int64_t>(base),
                              rank,
                              dataType,
                              interleave,
                              swizzle,
                              l2Promotion,
                              oobFill};
  for (int64_t i = 0; i < rank; ++i)
    key.insert(key.end(), {static_cast<int64_t>(dims[i]),
                           static_cast<int64_t>(strides[i]), box[i]});
  State &s = state();
  std::lock_guard<std::mutex> lock(s.tensorMapsMutex);
  if (auto it = s.tensorMaps.find(key); it != s.tensorMaps.end())
    return reinterpret_cast<void *>(it->second);

  TensorMap map;
  check(d.cuTensorMapEncodeTiled(
            &map, static_cast<int>(dataType), static_cast<unsigned>(rank), base,
            dims, strides + 1, box, elementStrides,
            static_cast<int>(interleave), static_cast<int>(swizzle),
            static_cast<int>(l2Promotion), static_cast<int>(oobFill)),
        "cuTensorMapEncodeTiled");
  CUdeviceptr copy = 0;
  check(d.cuMemAlloc(&copy, sizeof(TensorMap)), "cuMemAlloc (tensor map)");
  check(d.cuMemcpyHtoD(copy, &map, sizeof(TensorMap)),
        "cuMemcpyHtoD (tensor map)");
  s.tensorMaps.emplace(std::move(key), copy);
  return reinterpret_cast<void *>(copy);
}
