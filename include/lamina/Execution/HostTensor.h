//===- HostTensor.h - Dense host arrays and .npy files ----------*- C++ -*-===//

#ifndef LAMINA_EXECUTION_HOSTTENSOR_H
#define LAMINA_EXECUTION_HOSTTENSOR_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir::lamina {

/// Element types crossing the host boundary. LNS numbers travel as their
/// int64 codes; bf16 travels as its 16 raw bits (NumPy has no bf16).
enum class ElementKind { F32, F64, F16, BF16, I64, I32 };

size_t getElementSize(ElementKind kind);
llvm::StringRef getElementName(ElementKind kind);

/// The bytes of a host tensor: its own, allocated on 64-byte (cache line)
/// boundaries so that compiled vector loads of rows and packed weight
/// blocks never straddle lines needlessly, or borrowed from memory that
/// `owner` keeps alive (a caller's NumPy array). Moved, not copied: `clone`
/// copies the bytes.
class HostBuffer {
public:
  HostBuffer() = default;
  /// `size` bytes of uninitialized memory (std::bad_alloc if there is no
  /// such memory: for copies of buffers that exist).
  static HostBuffer allocate(size_t size);
  /// `size` bytes of uninitialized memory, or an AllocationError naming
  /// `what` when this machine has not that much memory.
  static llvm::Expected<HostBuffer> tryAllocate(size_t size,
                                                llvm::StringRef what);
  /// `size` bytes at `data`, valid while `owner` lives.
  static HostBuffer borrow(uint8_t *data, size_t size,
                           std::shared_ptr<void> owner);

  HostBuffer(HostBuffer &&other) noexcept { *this = std::move(other); }
  HostBuffer &operator=(HostBuffer &&other) noexcept;
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;
  HostBuffer clone() const;

  uint8_t *data() const { return bytes; }
  size_t size() const { return length; }
  bool empty() const { return length == 0; }
  /// What keeps the bytes alive: held by another owner (a NumPy array made
  /// of them), they outlive this buffer.
  std::shared_ptr<void> getOwner() const { return owner; }

private:
  uint8_t *bytes = nullptr;
  size_t length = 0;
  std::shared_ptr<void> owner;
};

/// A tensor that cannot be allocated: its byte size overflows 64 bits, is
/// more than this machine's memory, or the allocation failed. lamina-run
/// reports it as an error; Python raises lamina.AllocationError.
class AllocationError : public llvm::ErrorInfo<AllocationError> {
public:
  static char ID;
  explicit AllocationError(std::string text) : text(std::move(text)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::string text;
};

/// An AllocationError naming `what` when `bytes` is more than this
/// machine's memory (memory is overcommitted: such an allocation would
/// succeed and fail when written).
llvm::Error checkFitsInMemory(uint64_t bytes, llvm::StringRef what);

/// The bytes a tensor of `kind` and `shape` takes, or an AllocationError
/// when the count overflows 64 bits.
llvm::Expected<size_t> getByteSize(ElementKind kind,
                                   llvm::ArrayRef<int64_t> shape);

/// A dense, row-major array on the host (its bytes its own or borrowed).
struct HostTensor {
  ElementKind kind = ElementKind::F32;
  llvm::SmallVector<int64_t> shape;
  HostBuffer bytes;

  /// A zero tensor, or an AllocationError naming its type and size.
  static llvm::Expected<HostTensor> zeros(ElementKind kind,
                                          llvm::ArrayRef<int64_t> shape);
  /// A tensor whose bytes are not initialized: for results the program
  /// writes whole (or an AllocationError).
  static llvm::Expected<HostTensor>
  uninitialized(ElementKind kind, llvm::ArrayRef<int64_t> shape);
  HostTensor clone() const;
  /// The same bytes, shared (writes through either are seen by both).
  HostTensor view() const;
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

/// Views of `tensors` (HostTensor::view), e.g. to pass them on while
/// keeping them.
std::vector<HostTensor> viewAll(llvm::ArrayRef<HostTensor> tensors);

/// Reads a C-ordered .npy file (format 1.0–3.0) of a supported dtype.
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);

/// Parses the bytes of a .npy file; `name` names it in errors.
llvm::Expected<HostTensor> parseNpy(llvm::StringRef data, llvm::StringRef name);

/// Writes `tensor` as a .npy 1.0 file (bf16 as '<u2').
llvm::Error writeNpy(llvm::StringRef path, const HostTensor &tensor);

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_HOSTTENSOR_H
