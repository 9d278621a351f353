//===- HostTensor.h - Dense host arrays and .npy files ----------*- C++ -*-===//

#ifndef LAMINA_EXECUTION_HOSTTENSOR_H
#define LAMINA_EXECUTION_HOSTTENSOR_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace mlir::lamina {

/// Element types crossing the host boundary. LNS numbers travel as their
/// int64 codes; bf16 travels as its 16 raw bits (NumPy has no bf16).
enum class ElementKind { F32, F64, F16, BF16, I64, I32 };

size_t getElementSize(ElementKind kind);
llvm::StringRef getElementName(ElementKind kind);

/// Allocates on 64-byte (cache line) boundaries, so that compiled vector
/// loads of rows and packed weight blocks never straddle lines needlessly.
template <typename T> struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <typename U> CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), kAlignment));
  }
  void deallocate(T *p, size_t) { ::operator delete(p, kAlignment); }
  template <typename U> bool operator==(const CacheLineAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const CacheLineAllocator<U> &) const {
    return false;
  }
};

/// A dense, row-major array owned by the host.
struct HostTensor {
  ElementKind kind = ElementKind::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<uint8_t, CacheLineAllocator<uint8_t>> bytes;

  static HostTensor zeros(ElementKind kind, llvm::ArrayRef<int64_t> shape);
  int64_t getNumElements() const;
  /// Element `i` converted to double (bf16/f16 widened exactly).
  double getAsDouble(int64_t i) const;
  void setFromDouble(int64_t i, double value);

  /// Block `index` of `count` equal blocks along `axis` (a rank's block of
  /// a tensor sharded on `axis`); with `groups`, the axis is that many
  /// equal groups and the block is the `index`-th block of each.
  HostTensor getBlock(int64_t axis, int64_t index, int64_t count,
                      int64_t groups = 1) const;
};

/// Reads a C-ordered .npy file (format 1.0–3.0) of a supported dtype.
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);

/// Parses the bytes of a .npy file; `name` names it in errors.
llvm::Expected<HostTensor> parseNpy(llvm::StringRef data, llvm::StringRef name);

/// Writes `tensor` as a .npy 1.0 file (bf16 as '<u2').
llvm::Error writeNpy(llvm::StringRef path, const HostTensor &tensor);

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_HOSTTENSOR_H
