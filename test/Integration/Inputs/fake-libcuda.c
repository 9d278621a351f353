/* A stand-in for libcuda.so.1 that runs nothing on a GPU: device memory is
 * host memory, launches and tensor maps are logged (to $LAMINA_FAKE_CUDA_LOG)
 * with the arguments Lamina's runtime passes, so that tests on machines
 * without a GPU can check the host side of generated code: launch
 * geometry, shared memory, TMA descriptors. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

static FILE *logFile(void) {
  static FILE *file;
  if (!file) {
    const char *path = getenv("LAMINA_FAKE_CUDA_LOG");
    file = path ? fopen(path, "w") : stderr;
  }
  return file;
}

#define LOG(...)                                                               \
  do {                                                                         \
    fprintf(logFile(), __VA_ARGS__);                                           \
    fflush(logFile());                                                         \
  } while (0)

CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDeviceGetCount(int *count) { *count = 1; return 0; }
CUresult cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  *context = (void *)0x1;
  return 0;
}
CUresult cuCtxSetCurrent(void *context) { return 0; }
CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = "fake driver error";
  return 0;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  uint32_t magic;
  memcpy(&magic, image, sizeof(magic));
  LOG("cuModuleLoadData magic=0x%08x\n", magic);
  *module = (void *)0x2;
  return 0;
}
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                            int *options, void **values) {
  LOG("cuModuleLoadDataEx\n");
  *module = (void *)0x2;
  return 0;
}
CUresult cuModuleUnload(void *module) { return 0; }
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  LOG("cuModuleGetFunction %s\n", name);
  *function = (void *)0x3;
  return 0;
}
CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  LOG("cuFuncSetAttribute attribute=%d value=%d\n", attribute, value);
  return 0;
}
CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        void *stream, void **params, void **extra) {
  LOG("cuLaunchKernel grid=(%u,%u,%u) block=(%u,%u,%u) smem=%u stream=%p\n",
      gx, gy, gz, bx, by, bz, smem, stream);
  return 0;
}

CUresult cuStreamCreate(void **stream, unsigned flags) {
  *stream = (void *)0x4;
  return 0;
}
CUresult cuStreamDestroy_v2(void *stream) { return 0; }
CUresult cuStreamSynchronize(void *stream) { return 0; }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  return 0;
}
CUresult cuEventCreate(void **event, unsigned flags) {
  *event = (void *)0x5;
  return 0;
}
CUresult cuEventDestroy_v2(void *event) { return 0; }
CUresult cuEventSynchronize(void *event) { return 0; }
CUresult cuEventRecord(void *event, void *stream) { return 0; }

CUresult cuMemAlloc_v2(uint64_t *pointer, size_t bytes) {
  *pointer = (uint64_t)(uintptr_t)calloc(1, bytes);
  return 0;
}
CUresult cuMemAllocAsync(uint64_t *pointer, size_t bytes, void *stream) {
  LOG("cuMemAllocAsync bytes=%zu stream=%p\n", bytes, stream);
  return cuMemAlloc_v2(pointer, bytes);
}
CUresult cuMemFreeAsync(uint64_t pointer, void *stream) {
  LOG("cuMemFreeAsync stream=%p\n", stream);
  free((void *)(uintptr_t)pointer);
  return 0;
}
CUresult cuMemAllocManaged(uint64_t *pointer, size_t bytes, unsigned flags) {
  return cuMemAlloc_v2(pointer, bytes);
}
CUresult cuMemFree_v2(uint64_t pointer) {
  free((void *)(uintptr_t)pointer);
  return 0;
}
CUresult cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, void *s) {
  memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return 0;
}
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes) {
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return 0;
}
CUresult cuMemsetD32Async(uint64_t dst, unsigned value, size_t n, void *s) {
  for (size_t i = 0; i < n; ++i)
    ((uint32_t *)(uintptr_t)dst)[i] = value;
  return 0;
}
CUresult cuMemsetD16Async(uint64_t dst, unsigned short value, size_t n,
                          void *s) {
  for (size_t i = 0; i < n; ++i)
    ((uint16_t *)(uintptr_t)dst)[i] = value;
  return 0;
}
CUresult cuMemHostRegister_v2(void *pointer, size_t bytes, unsigned flags) {
  return 0;
}
CUresult cuMemHostUnregister(void *pointer) { return 0; }

CUresult cuTensorMapEncodeTiled(void *map, int dataType, unsigned rank,
                                void *address, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box,
                                const unsigned *elementStrides, int interleave,
                                int swizzle, int l2Promotion, int oobFill) {
  LOG("cuTensorMapEncodeTiled dtype=%d rank=%u dims=[%llu,%llu] "
      "stride=%llu box=[%u,%u] element_strides=[%u,%u] interleave=%d "
      "swizzle=%d l2=%d oob=%d aligned=%d\n",
      dataType, rank, (unsigned long long)dims[0], (unsigned long long)dims[1],
      (unsigned long long)strides[0], box[0], box[1], elementStrides[0],
      elementStrides[1], interleave, swizzle, l2Promotion, oobFill,
      (int)(((uintptr_t)address % 16) == 0));
  memset(map, 0, 128);
  return 0;
}
