//===- AsmUtils.h - Helpers shared by custom attribute syntax ---*- C++ -*-===//

#ifndef LAMINA_SUPPORT_ASMUTILS_H
#define LAMINA_SUPPORT_ASMUTILS_H

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"

namespace mlir::lamina {

/// The shortest decimal form of `value` that reads back as the same double
/// ("0.1", "1.5"), always as a float literal ("2.0", not "2").
inline std::string formatShortestFloat(const llvm::APFloat &value) {
  llvm::SmallString<32> text;
  for (unsigned digits = 1; digits <= 17; ++digits) {
    text.clear();
    value.toString(text, digits, /*FormatMaxPadding=*/3);
    llvm::APFloat back(value.getSemantics(), text);
    if (back.bitwiseIsEqual(value))
      break;
  }
  if (text.find_first_of(".eEn") == llvm::StringRef::npos)
    text += ".0";
  return std::string(text);
}

inline void printShortestFloat(AsmPrinter &printer, const llvm::APFloat &value) {
  printer << formatShortestFloat(value);
}

} // namespace mlir::lamina

#endif // LAMINA_SUPPORT_ASMUTILS_H
