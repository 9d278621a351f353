//===- CudaRuntime.h - GPU calls of generated host code --------*- C++ -*-===//
//
// The `mgpu*` functions that upstream's gpu-to-llvm lowering calls, over the
// CUDA driver API, which is opened with dlopen("libcuda.so.1") on first use:
// nothing here needs CUDA to build, and a machine without a driver or a GPU
// gets a clear message instead of a link or load error. Plain C++ with no
// LLVM dependency, so that ahead-of-time artefacts embed it.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_RUNTIME_CUDARUNTIME_H
#define LAMINA_RUNTIME_CUDARUNTIME_H

#include <cstddef>
#include <cstdint>

extern "C" {
//===-- Lamina's own entry points -----------------------------------------===//

/// Loads the driver and makes the primary context of the current device
/// current. Returns null on success, else why no GPU can be used (no
/// libcuda.so.1, no device, a driver error); never aborts.
const char *laminaCudaInit();

/// Stream-ordered mode for frameworks: with a non-null `stream` every
/// launch, copy and free of generated code goes to that stream and nothing
/// synchronises (the caller does); null restores the default (each call
/// runs to completion before returning).
void laminaCudaUseStream(void *stream);

//===-- Upstream's GPU runtime ABI ----------------------------------------===//

void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes);
void mgpuMemHostUnregister(void *ptr);
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes);
void mgpuSetDefaultDevice(int32_t device);
/// A device copy of the TMA descriptor of a ranked memref (`descriptor`:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}); `boxDims`
/// outermost-first. Enum arguments are CUtensorMap* values. Descriptors are
/// cached per (address, shape, strides, box, modes).
void *mgpuTensorMapEncodeTiledMemref(int64_t rank, void *descriptor,
                                     int64_t dataType, int64_t interleave,
                                     int64_t swizzle, int64_t l2Promotion,
                                     int64_t oobFill, int64_t *boxDims);
}

#endif // LAMINA_RUNTIME_CUDARUNTIME_H
