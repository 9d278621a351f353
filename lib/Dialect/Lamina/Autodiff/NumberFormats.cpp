//===- NumberFormats.cpp - Builtin floats and LNS numbers in training -----===//
//
// The NumberFormatTypeInterface models: floats start gradients from 0.0,
// add them with arith.addf and sum rows with a linalg reduction; LNS
// numbers start from the code of zero, sum rows with the LNS training
// spec's sequential lns.sum, and do not add the gradients of a value used
// twice (the xlnstorch reference rejects fan-out, whose LNS sum order it
// leaves undefined).
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "lamina/Lamina/IR/LaminaNumberFormatInterface.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;
namespace lns = mlir::lamina::lns;

namespace {
template <typename FloatT>
struct FloatFormat
    : NumberFormatTypeInterface::ExternalModel<FloatFormat<FloatT>, FloatT> {
  Value buildGradientZero(Type type, OpBuilder &builder, Location loc) const {
    return arith::ConstantOp::create(builder, loc, builder.getZeroAttr(type));
  }
  FailureOr<Value> buildGradientSum(Type, OpBuilder &builder, Location loc,
                                    Value lhs, Value rhs,
                                    std::string &) const {
    return arith::AddFOp::create(builder, loc, lhs, rhs).getResult();
  }
  Value buildGradientSumOverRows(Type, OpBuilder &builder, Location loc,
                                 Value gradient) const {
    return buildSumLeadingDims(builder, loc, gradient);
  }
};

struct LnsFormat : NumberFormatTypeInterface::ExternalModel<LnsFormat,
                                                            lns::NumType> {
  Value buildGradientZero(Type type, OpBuilder &builder, Location loc) const {
    return lns::ConstantOp::create(builder, loc, type,
                                   builder.getI64IntegerAttr(
                                       lns::codes::kZero));
  }
  FailureOr<Value> buildGradientSum(Type, OpBuilder &, Location, Value,
                                    Value, std::string &whyNot) const {
    whyNot = "an LNS value, feeds more than one operation (fan-out); LNS "
             "gradients are not added across uses, as in the xlnstorch "
             "reference: use the value once per backward";
    return failure();
  }
  Value buildGradientSumOverRows(Type, OpBuilder &builder, Location loc,
                                 Value gradient) const {
    return buildLnsSumLeadingDims(builder, loc, gradient);
  }
};
} // namespace

void mlir::lamina::registerNumberFormatModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, BuiltinDialect *) {
    Float16Type::attachInterface<FloatFormat<Float16Type>>(*context);
    BFloat16Type::attachInterface<FloatFormat<BFloat16Type>>(*context);
    Float32Type::attachInterface<FloatFormat<Float32Type>>(*context);
    Float64Type::attachInterface<FloatFormat<Float64Type>>(*context);
  });
  registry.addExtension(+[](MLIRContext *context, lns::LnsDialect *) {
    lns::NumType::attachInterface<LnsFormat>(*context);
  });
}
