//===- RunInputs.cpp - Arguments as lamina-run's --input spells them ------===//

#include "lamina/Execution/RunInputs.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>

using namespace mlir::lamina;
using llvm::StringRef;

llvm::Expected<HostTensor> mlir::lamina::parseScalarInput(StringRef text) {
  auto [type, value] = text.split(':');
  HostTensor scalar;
  double number;
  int64_t integer;
  if (type == "i64" && !value.getAsInteger(10, integer)) {
    scalar = llvm::cantFail(HostTensor::zeros(ElementKind::I64, {}));
    std::memcpy(scalar.bytes.data(), &integer, 8);
    return scalar;
  }
  if (type == "i32" && !value.getAsInteger(10, integer)) {
    if (integer < INT32_MIN || integer > INT32_MAX)
      return llvm::createStringError(std::errc::invalid_argument,
                                     "scalar '%s' does not fit in i32",
                                     text.str().c_str());
    scalar = llvm::cantFail(HostTensor::zeros(ElementKind::I32, {}));
    scalar.setFromDouble(0, static_cast<double>(integer));
    return scalar;
  }
  if ((type == "f32" || type == "f64") && !value.getAsDouble(number)) {
    scalar = llvm::cantFail(HostTensor::zeros(
        type == "f32" ? ElementKind::F32 : ElementKind::F64, {}));
    scalar.setFromDouble(0, number);
    return scalar;
  }
  // A path that names something else than an .npy file is not a scalar.
  if (llvm::sys::fs::is_directory(text))
    return llvm::createStringError(std::errc::invalid_argument,
                                   "--input '%s' is a directory; inputs are "
                                   ".npy files or scalars (i64:<n>, ...)",
                                   text.str().c_str());
  if (llvm::sys::fs::exists(text))
    return llvm::createStringError(std::errc::invalid_argument,
                                   "--input '%s' is not an .npy file; inputs "
                                   "are .npy files or scalars (i64:<n>, ...)",
                                   text.str().c_str());
  return llvm::createStringError(std::errc::invalid_argument,
                                 "cannot read scalar '%s' (expected "
                                 "i64:<n>, i32:<n>, f32:<x> or f64:<x>)",
                                 text.str().c_str());
}

llvm::Expected<HostTensor> mlir::lamina::readRunInput(StringRef text) {
  return text.ends_with(".npy") ? readNpy(text) : parseScalarInput(text);
}
