//===- LnsDialect.cpp - The lns dialect, its type and attributes ----------===//

#include "lamina/Lns/IR/Lns.h"
#include "lamina/Support/AsmUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::lamina::lns;

#include "lamina/Lns/IR/LnsOpsDialect.cpp.inc"

#include "lamina/Lns/IR/LnsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "lamina/Lns/IR/LnsAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "lamina/Lns/IR/LnsOpsTypes.cpp.inc"

void LnsDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lamina/Lns/IR/LnsOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "lamina/Lns/IR/LnsOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "lamina/Lns/IR/LnsAttrs.cpp.inc"
      >();
}

Operation *LnsDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed || !getLnsElementType(type))
    return nullptr;
  return ConstantOp::create(builder, loc, type, typed);
}

NumType mlir::lamina::lns::getLnsElementType(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return dyn_cast<NumType>(shaped.getElementType());
  return dyn_cast<NumType>(type);
}

//===----------------------------------------------------------------------===//
// NumType
//===----------------------------------------------------------------------===//

/// Beyond 52 fractional bits `pow(2, pow(2, -f))` rounds to 1.0 in double.
static constexpr unsigned kMaxFracBits = 52;

Type NumType::parse(AsmParser &parser) {
  std::optional<unsigned> fracBits;
  FloatAttr base;
  if (parser.parseLess())
    return {};
  do {
    SMLoc loc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "f") {
      unsigned value;
      if (parser.parseInteger(value))
        return {};
      fracBits = value;
    } else if (key == "b") {
      double value;
      if (parser.parseFloat(value))
        return {};
      base = FloatAttr::get(Float64Type::get(parser.getContext()), value);
    } else {
      parser.emitError(loc, "unknown LNS type parameter '")
          << key << "', expected 'f' (fractional bits) or 'b' (base)";
      return {};
    }
  } while (succeeded(parser.parseOptionalComma()));
  if (parser.parseGreater())
    return {};
  return parser.getChecked<NumType>(parser.getContext(), fracBits, base);
}

void NumType::print(AsmPrinter &printer) const {
  printer << "<";
  if (getFracBits())
    printer << "f = " << *getFracBits();
  if (getFracBits() && getExplicitBase())
    printer << ", ";
  if (getExplicitBase()) {
    printer << "b = ";
    printShortestFloat(printer, getExplicitBase().getValue());
  }
  printer << ">";
}

LogicalResult NumType::verify(function_ref<InFlightDiagnostic()> emitError,
                              std::optional<unsigned> fracBits,
                              FloatAttr explicitBase) {
  if (fracBits && explicitBase)
    return emitError() << "LNS type takes either 'f' or 'b', not both";
  if (!fracBits && !explicitBase)
    return emitError() << "LNS type needs 'f' (fractional bits) or 'b' (base)";
  if (fracBits && *fracBits > kMaxFracBits)
    return emitError() << "LNS type with f = " << *fracBits
                       << " has a base that rounds to 1.0 in double; f must "
                          "be at most "
                       << kMaxFracBits;
  if (explicitBase) {
    if (!explicitBase.getType().isF64())
      return emitError() << "LNS base must be an f64 value";
    double base = explicitBase.getValueAsDouble();
    if (!(base > 1.0) || std::isinf(base))
      return emitError() << "LNS base must be a finite number greater than "
                            "1, got "
                         << formatShortestFloat(explicitBase.getValue());
  }
  return success();
}

double NumType::getBase() const {
  if (getFracBits())
    return std::pow(2.0, std::pow(2.0, -static_cast<double>(*getFracBits())));
  return getExplicitBase().getValueAsDouble();
}

double NumType::getLogBase() const { return std::log(getBase()); }

bool NumType::hasSameBase(NumType other) const {
  return getBase() == other.getBase();
}
