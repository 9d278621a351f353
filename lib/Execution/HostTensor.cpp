//===- HostTensor.cpp - Dense host arrays and .npy files ------------------===//

#include "lamina/Execution/HostTensor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <new>
#include <numeric>
#include <optional>
#include <unistd.h>
#include <utility>

using namespace mlir::lamina;
using llvm::createStringError;
using llvm::StringRef;

size_t mlir::lamina::getElementSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  }
  llvm_unreachable("unknown element kind");
}

StringRef mlir::lamina::getElementName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::I64:
    return "i64";
  case ElementKind::I32:
    return "i32";
  }
  llvm_unreachable("unknown element kind");
}

/// NumPy dtype strings, little endian.
static StringRef getNpyDescr(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "<f4";
  case ElementKind::F64:
    return "<f8";
  case ElementKind::F16:
    return "<f2";
  case ElementKind::BF16:
    return "<u2";
  case ElementKind::I64:
    return "<i8";
  case ElementKind::I32:
    return "<i4";
  }
  llvm_unreachable("unknown element kind");
}

static constexpr std::align_val_t kCacheLine{64};

HostBuffer HostBuffer::allocate(size_t size) {
  HostBuffer buffer;
  if (size == 0)
    return buffer;
  auto *bytes = static_cast<uint8_t *>(::operator new(size, kCacheLine));
  buffer.bytes = bytes;
  buffer.length = size;
  buffer.owner = std::shared_ptr<void>(
      bytes, [](void *p) { ::operator delete(p, kCacheLine); });
  return buffer;
}

char AllocationError::ID = 0;

void AllocationError::log(llvm::raw_ostream &os) const { os << text; }

std::error_code AllocationError::convertToErrorCode() const {
  return std::make_error_code(std::errc::not_enough_memory);
}

/// This machine's physical memory in bytes (0 when unknown).
static uint64_t getPhysicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
}

static std::string formatBytes(uint64_t bytes) {
  return llvm::formatv("{0:F1} GiB", double(bytes) / double(1ull << 30));
}

llvm::Error mlir::lamina::checkFitsInMemory(uint64_t bytes, StringRef what) {
  uint64_t memory = getPhysicalMemory();
  if (memory && bytes > memory)
    return llvm::make_error<AllocationError>(
        llvm::formatv("{0} needs {1}, more than this machine's {2} of memory",
                      what, formatBytes(bytes), formatBytes(memory)));
  return llvm::Error::success();
}

llvm::Expected<HostBuffer> HostBuffer::tryAllocate(size_t size,
                                                   StringRef what) {
  HostBuffer buffer;
  if (size == 0)
    return buffer;
  if (llvm::Error error = checkFitsInMemory(size, what))
    return std::move(error);
  auto *bytes = static_cast<uint8_t *>(
      ::operator new(size, kCacheLine, std::nothrow));
  if (!bytes)
    return llvm::make_error<AllocationError>(llvm::formatv(
        "{0} needs {1}: out of memory", what, formatBytes(size)));
  buffer.bytes = bytes;
  buffer.length = size;
  buffer.owner = std::shared_ptr<void>(
      bytes, [](void *p) { ::operator delete(p, kCacheLine); });
  return buffer;
}

HostBuffer HostBuffer::borrow(uint8_t *data, size_t size,
                              std::shared_ptr<void> owner) {
  HostBuffer buffer;
  buffer.bytes = data;
  buffer.length = size;
  buffer.owner = std::move(owner);
  return buffer;
}

HostBuffer &HostBuffer::operator=(HostBuffer &&other) noexcept {
  bytes = std::exchange(other.bytes, nullptr);
  length = std::exchange(other.length, 0);
  owner = std::move(other.owner);
  return *this;
}

HostBuffer HostBuffer::clone() const {
  HostBuffer copy = allocate(length);
  if (length)
    std::memcpy(copy.data(), bytes, length);
  return copy;
}

/// "tensor<4x8xf32>"
static std::string formatType(ElementKind kind, llvm::ArrayRef<int64_t> shape) {
  std::string text = "tensor<";
  for (int64_t size : shape)
    text += std::to_string(size) + "x";
  return text + getElementName(kind).str() + ">";
}

llvm::Expected<size_t> mlir::lamina::getByteSize(ElementKind kind,
                                                 llvm::ArrayRef<int64_t> shape) {
  std::optional<int64_t> bytes = int64_t(getElementSize(kind));
  for (int64_t size : shape)
    bytes = size < 0 ? std::nullopt : llvm::checkedMul(*bytes, size);
  if (!bytes)
    return llvm::make_error<AllocationError>(
        "a " + formatType(kind, shape) +
        ": its size in bytes does not fit in 64 bits");
  return size_t(*bytes);
}

/// A tensor of `kind` and `shape`, its bytes zeroed when `zero`.
static llvm::Expected<HostTensor>
makeTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape, bool zero) {
  llvm::Expected<size_t> size = getByteSize(kind, shape);
  if (!size)
    return size.takeError();
  llvm::Expected<HostBuffer> bytes =
      HostBuffer::tryAllocate(*size, "a " + formatType(kind, shape));
  if (!bytes)
    return bytes.takeError();
  if (zero && *size)
    std::memset(bytes->data(), 0, *size);
  HostTensor tensor;
  tensor.kind = kind;
  tensor.shape.assign(shape.begin(), shape.end());
  tensor.bytes = std::move(*bytes);
  return tensor;
}

llvm::Expected<HostTensor> HostTensor::zeros(ElementKind kind,
                                             llvm::ArrayRef<int64_t> shape) {
  return makeTensor(kind, shape, /*zero=*/true);
}

llvm::Expected<HostTensor>
HostTensor::uninitialized(ElementKind kind, llvm::ArrayRef<int64_t> shape) {
  return makeTensor(kind, shape, /*zero=*/false);
}

HostTensor HostTensor::view() const {
  HostTensor shared;
  shared.kind = kind;
  shared.shape = shape;
  shared.bytes =
      HostBuffer::borrow(bytes.data(), bytes.size(), bytes.getOwner());
  return shared;
}

std::vector<HostTensor>
mlir::lamina::viewAll(llvm::ArrayRef<HostTensor> tensors) {
  std::vector<HostTensor> views;
  views.reserve(tensors.size());
  for (const HostTensor &tensor : tensors)
    views.push_back(tensor.view());
  return views;
}

HostTensor HostTensor::clone() const {
  HostTensor copy;
  copy.kind = kind;
  copy.shape = shape;
  copy.bytes = bytes.clone();
  return copy;
}

int64_t HostTensor::getNumElements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // subnormal: normalize
      int shift = 0;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ff;
      bits = sign | uint32_t(127 - 15 - shift + 1) << 23 | (mantissa << 13);
    }
  } else {
    bits = sign | (exponent - 15 + 127) << 23 | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

template <typename T> static T load(const uint8_t *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

double HostTensor::getAsDouble(int64_t i) const {
  const uint8_t *p = bytes.data() + i * getElementSize(kind);
  switch (kind) {
  case ElementKind::F32:
    return load<float>(p);
  case ElementKind::F64:
    return load<double>(p);
  case ElementKind::F16:
    return halfToFloat(load<uint16_t>(p));
  case ElementKind::BF16: {
    uint32_t bits = uint32_t(load<uint16_t>(p)) << 16;
    return load<float>(reinterpret_cast<const uint8_t *>(&bits));
  }
  case ElementKind::I64:
    return static_cast<double>(load<int64_t>(p));
  case ElementKind::I32:
    return load<int32_t>(p);
  }
  llvm_unreachable("unknown element kind");
}

/// Round-to-nearest-even narrowing of a float to bf16 bits.
static uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return uint16_t((bits >> 16) | 0x40); // quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

/// Round-to-nearest-even narrowing of a float to IEEE half bits.
static uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = (bits >> 16) & 0x8000;
  uint32_t absBits = bits & 0x7fffffff;
  if (absBits > 0x7f800000)
    return sign | 0x7e00;
  if (absBits >= 0x477ff000) // rounds to beyond the largest half
    return sign | 0x7c00;
  if (absBits < 0x38800000) { // subnormal or zero in half
    float magnitude;
    std::memcpy(&magnitude, &absBits, 4);
    // Scale so that the half subnormal unit (2^-24) becomes 1, then round.
    float scaled = magnitude * 16777216.0f;
    return sign | uint16_t(std::nearbyint(scaled));
  }
  uint32_t mantissa = absBits & 0x7fffff;
  uint32_t exponent = (absBits >> 23) - 127 + 15;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | uint16_t(half);
}

void HostTensor::setFromDouble(int64_t i, double value) {
  uint8_t *p = bytes.data() + i * getElementSize(kind);
  auto store = [&](auto v) { std::memcpy(p, &v, sizeof(v)); };
  switch (kind) {
  case ElementKind::F32:
    return store(static_cast<float>(value));
  case ElementKind::F64:
    return store(value);
  case ElementKind::F16:
    return store(floatToHalf(static_cast<float>(value)));
  case ElementKind::BF16:
    return store(floatToBf16(static_cast<float>(value)));
  case ElementKind::I64:
    return store(static_cast<int64_t>(value));
  case ElementKind::I32:
    return store(static_cast<int32_t>(value));
  }
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

/// The value of `key` in the header's Python dict literal.
static std::optional<StringRef> findDictValue(StringRef header, StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  return rest.ltrim();
}

llvm::Expected<HostTensor> mlir::lamina::readNpy(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return createStringError(buffer.getError(), "cannot read '%s': %s",
                             path.str().c_str(),
                             buffer.getError().message().c_str());
  return parseNpy((*buffer)->getBuffer(), path);
}

llvm::Expected<HostTensor> mlir::lamina::parseNpy(StringRef data,
                                                  StringRef path) {
  auto fail = [&](const char *what) {
    return createStringError(std::errc::invalid_argument,
                             "'%s' is not a supported .npy file: %s",
                             path.str().c_str(), what);
  };
  if (data.size() < 10 || !data.starts_with("\x93NUMPY"))
    return fail("missing the \\x93NUMPY magic");
  uint8_t major = data[6];
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = load<uint16_t>(data.bytes_begin() + 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      return fail("truncated header");
    headerLength = load<uint32_t>(data.bytes_begin() + 8);
    headerStart = 12;
  } else {
    return fail("unknown format version");
  }
  if (data.size() < headerStart + headerLength)
    return fail("truncated header");
  StringRef header = data.substr(headerStart, headerLength);

  std::optional<StringRef> descr = findDictValue(header, "descr");
  std::optional<StringRef> fortran = findDictValue(header, "fortran_order");
  std::optional<StringRef> shapeText = findDictValue(header, "shape");
  if (!descr || !fortran || !shapeText)
    return fail("header lacks descr, fortran_order or shape");
  if (fortran->starts_with("True"))
    return fail("Fortran-ordered arrays are not supported (use C order)");

  HostTensor tensor;
  StringRef dtype = descr->drop_front().take_until([](char c) {
    return c == '\'';
  });
  if (dtype == "<f4")
    tensor.kind = ElementKind::F32;
  else if (dtype == "<f8")
    tensor.kind = ElementKind::F64;
  else if (dtype == "<f2")
    tensor.kind = ElementKind::F16;
  else if (dtype == "<u2" || dtype == "<i2")
    tensor.kind = ElementKind::BF16;
  else if (dtype == "<i8")
    tensor.kind = ElementKind::I64;
  else if (dtype == "<i4")
    tensor.kind = ElementKind::I32;
  else
    return createStringError(std::errc::invalid_argument,
                             "'%s' has dtype %s; supported: <f4 <f8 <f2 "
                             "<u2 (bf16 bits) <i8 <i4",
                             path.str().c_str(), dtype.str().c_str());

  StringRef dims = shapeText->drop_front().take_until([](char c) {
    return c == ')';
  });
  llvm::SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t size;
    if (part.getAsInteger(10, size) || size < 0)
      return fail("unreadable shape");
    tensor.shape.push_back(size);
  }
  // The header's byte size, unless it does not fit in 64 bits.
  int64_t expected = getElementSize(tensor.kind);
  for (int64_t size : tensor.shape)
    if (llvm::MulOverflow(expected, size, expected))
      return createStringError(std::errc::invalid_argument,
                               "'%s' has a header shape (%s) whose byte size "
                               "does not fit in 64 bits",
                               path.str().c_str(), dims.str().c_str());
  StringRef payload = data.drop_front(headerStart + headerLength);
  if (payload.size() != static_cast<uint64_t>(expected))
    return createStringError(std::errc::invalid_argument,
                             "'%s' holds %zu data bytes, its header says "
                             "%llu",
                             path.str().c_str(), payload.size(),
                             static_cast<unsigned long long>(expected));
  tensor.bytes = HostBuffer::allocate(payload.size());
  // An empty tensor has no bytes to copy (and a null data pointer).
  if (!payload.empty())
    std::memcpy(tensor.bytes.data(), payload.bytes_begin(), payload.size());
  return tensor;
}

llvm::Error mlir::lamina::writeNpy(StringRef path, const HostTensor &tensor) {
  std::string shape = "(";
  for (int64_t size : tensor.shape)
    shape += std::to_string(size) + ", ";
  if (tensor.shape.size() > 1)
    shape.erase(shape.size() - 2);
  else if (tensor.shape.size() == 1)
    shape.erase(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + getNpyDescr(tensor.kind).str() +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_None);
  if (error)
    return createStringError(error, "cannot write '%s': %s",
                             path.str().c_str(), error.message().c_str());
  out << "\x93NUMPY" << char(1) << char(0);
  uint16_t length = header.size();
  out.write(reinterpret_cast<const char *>(&length), 2);
  out << header;
  out.write(reinterpret_cast<const char *>(tensor.bytes.data()),
            tensor.bytes.size());
  return llvm::Error::success();
}

HostTensor HostTensor::getBlock(int64_t axis, int64_t index, int64_t count,
                                int64_t groups) const {
  llvm::SmallVector<int64_t> blockShape(shape);
  blockShape[axis] /= count;
  // (A block of a tensor that exists: its size does not overflow.)
  HostTensor block = llvm::cantFail(zeros(kind, blockShape));
  // Each step of the dims before `axis`, and of the axis' groups, copies
  // one contiguous run: this block's part of the group.
  size_t element = getElementSize(kind);
  int64_t outer = groups, inner = element;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t groupSize = shape[axis] / groups;
  int64_t run = groupSize / count * inner;
  if (run == 0)
    return block;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(block.bytes.data() + o * run,
                bytes.data() + o * groupSize * inner + index * run, run);
  return block;
}
