//===- ConvolutionRules.cpp - Reverse-mode rules of 2-D convolutions ------===//
//
// linalg.conv_2d_nchw_fchw, as the importer writes nn.Conv2d: the input
// already zero-padded (tensor.pad, whose rule is here too), the bias
// broadcast into the init. Both gradients are one contraction each, written
// as generics whose maps read the operands through the convolution's
// geometry:
//
//   dW[f,c,kh,kw] = Σ_{n,oh,ow} x[n, c, oh·sh + kh·dh, ow·sw + kw·dw]
//                               · dy[n, f, oh, ow]
//   dx'[n,c,i,j]  = Σ_{f,kh,kw} z[n, f, i + kh·dh, j + kw·dw]
//                               · w'[f, c, kh, kw]
//
// where z is dy spread by the strides (s−1 zeros between its elements) and
// padded by the kernel's dilated reach on both sides, and w' the kernel
// turned by 180 degrees: the gather form of the transposed convolution. dx'
// covers the input rows the windows reach; rows a stride leaves out get zeros.
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Matchers.h"

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

/// The geometry of one static NCHW × FCHW convolution.
struct ConvGeometry {
  int64_t n, c, h, w, f, kh, kw, oh, ow;
  int64_t strides[2], dilations[2];

  /// The input rows (columns) the windows reach: the rest get no gradient.
  int64_t reachedRows() const {
    return (oh - 1) * strides[0] + (kh - 1) * dilations[0] + 1;
  }
  int64_t reachedColumns() const {
    return (ow - 1) * strides[1] + (kw - 1) * dilations[1] + 1;
  }
};

/// One contraction over the loops (p0..p3 parallel, r0..r2 reduction):
/// Σ lhs·rhs into zeros of `resultType`.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       RankedTensorType resultType, AffineMap lhsMap,
                       AffineMap rhsMap) {
  MLIRContext *context = b.getContext();
  Value zeros =
      buildZeros(b, loc, getAsIndexOpFoldResult(context, resultType.getShape()),
                 resultType.getElementType());
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(3, utils::IteratorType::reduction);
  // The result's dims are the first four loops.
  auto resultMap =
      AffineMap::get(7, 0,
                     {b.getAffineDimExpr(0), b.getAffineDimExpr(1),
                      b.getAffineDimExpr(2), b.getAffineDimExpr(3)},
                     context);
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{lhs, rhs}, zeros,
             ArrayRef<AffineMap>{lhsMap, rhsMap, resultMap}, iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               Value product =
                   arith::MulFOp::create(nb, nloc, args[0], args[1]);
               Value sum = arith::AddFOp::create(nb, nloc, product, args[2]);
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

/// dW over the loops (f, c, kh, kw, n, oh, ow).
Value buildFilterGradient(OpBuilder &b, Location loc, const ConvGeometry &g,
                          Value x, Value dy, RankedTensorType filterType) {
  AffineExpr f, c, kh, kw, n, oh, ow;
  bindDims(b.getContext(), f, c, kh, kw, n, oh, ow);
  auto xMap = AffineMap::get(7, 0,
                             {n, c, oh * g.strides[0] + kh * g.dilations[0],
                              ow * g.strides[1] + kw * g.dilations[1]},
                             b.getContext());
  auto dyMap = AffineMap::get(7, 0, {n, f, oh, ow}, b.getContext());
  return buildContraction(b, loc, x, dy, filterType, xMap, dyMap);
}

/// The filter with its kernel turned by 180 degrees: w[f, c, KH−1−kh,
/// KW−1−kw] (a copy: the contraction's maps must name every loop bare).
Value buildTurnedFilter(OpBuilder &b, Location loc, const ConvGeometry &g,
                        Value filter) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(filter.getType());
  AffineExpr f, c, kh, kw;
  bindDims(context, f, c, kh, kw);
  auto turned =
      AffineMap::get(4, 0, {f, c, g.kh - 1 - kh, g.kw - 1 - kw}, context);
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, filter, init,
             ArrayRef<AffineMap>{turned,
                                 AffineMap::getMultiDimIdentityMap(4, context)},
             SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

/// `value` written into zeros of `shape` from their origin, its elements
/// `strides` apart.
Value buildPlacedInZeros(OpBuilder &b, Location loc, Value value,
                         ArrayRef<int64_t> shape, ArrayRef<int64_t> strides) {
  MLIRContext *context = b.getContext();
  auto type = cast<RankedTensorType>(value.getType());
  Value zeros = buildZeros(b, loc, getAsIndexOpFoldResult(context, shape),
                           type.getElementType());
  SmallVector<int64_t> origin(shape.size(), 0);
  return tensor::InsertSliceOp::create(
      b, loc, value, zeros, getAsIndexOpFoldResult(context, origin),
      getAsIndexOpFoldResult(context, type.getShape()),
      getAsIndexOpFoldResult(context, strides));
}

/// dx over the loops (n, c, i, j, f, kh, kw), zero outside the reach.
Value buildInputGradient(OpBuilder &b, Location loc, const ConvGeometry &g,
                         Value dy, Value filter, RankedTensorType inputType) {
  MLIRContext *context = b.getContext();
  Type elt = inputType.getElementType();
  // dy spread by the strides into zeros.
  int64_t spreadRows = (g.oh - 1) * g.strides[0] + 1;
  int64_t spreadColumns = (g.ow - 1) * g.strides[1] + 1;
  Value spread = dy;
  if (g.strides[0] != 1 || g.strides[1] != 1)
    spread =
        buildPlacedInZeros(b, loc, dy, {g.n, g.f, spreadRows, spreadColumns},
                           {1, 1, g.strides[0], g.strides[1]});
  // Padded by the kernel's dilated reach on both sides.
  int64_t padRows = (g.kh - 1) * g.dilations[0];
  int64_t padColumns = (g.kw - 1) * g.dilations[1];
  Value padded = spread;
  if (padRows || padColumns) {
    SmallVector<int64_t> pad = {0, 0, padRows, padColumns};
    auto paddedType = RankedTensorType::get(
        {g.n, g.f, spreadRows + 2 * padRows, spreadColumns + 2 * padColumns},
        elt);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
    padded = tensor::PadOp::create(b, loc, paddedType, spread,
                                   getAsIndexOpFoldResult(context, pad),
                                   getAsIndexOpFoldResult(context, pad), zero);
  }
  AffineExpr n, c, i, j, f, kh, kw;
  bindDims(context, n, c, i, j, f, kh, kw);
  auto zMap = AffineMap::get(
      7, 0, {n, f, i + kh * g.dilations[0], j + kw * g.dilations[1]}, context);
  auto wMap = AffineMap::get(7, 0, {f, c, kh, kw}, context);
  int64_t rows = g.reachedRows(), columns = g.reachedColumns();
  auto reachedType = RankedTensorType::get({g.n, g.c, rows, columns}, elt);
  Value reached =
      buildContraction(b, loc, padded, buildTurnedFilter(b, loc, g, filter),
                       reachedType, zMap, wMap);
  if (rows == g.h && columns == g.w)
    return reached;
  return buildPlacedInZeros(b, loc, reached, inputType.getShape(),
                            {1, 1, 1, 1});
}

/// y = init + conv(x, w): dx, dW, and the cotangent itself for the init.
struct Conv2DRule : Rule<Conv2DRule, linalg::Conv2DNchwFchwOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto conv = cast<linalg::Conv2DNchwFchwOp>(op);
    auto inputType = cast<RankedTensorType>(conv.getInputs()[0].getType());
    auto filterType = cast<RankedTensorType>(conv.getInputs()[1].getType());
    auto resultType =
        cast<RankedTensorType>(conv.getResultTensors()[0].getType());
    if (!conv.hasPureTensorSemantics() || !inputType.hasStaticShape() ||
        !filterType.hasStaticShape() ||
        inputType.getElementType() != resultType.getElementType() ||
        filterType.getElementType() != resultType.getElementType())
      return op->emitOpError("backward is generated for static convolutions "
                             "of one float type only");
    ConvGeometry g;
    ArrayRef<int64_t> in = inputType.getShape(), w = filterType.getShape(),
                      out = resultType.getShape();
    g.n = in[0], g.c = in[1], g.h = in[2], g.w = in[3];
    g.f = w[0], g.kh = w[2], g.kw = w[3];
    g.oh = out[2], g.ow = out[3];
    for (auto [index, value] :
         llvm::enumerate(conv.getStrides().getValues<int64_t>()))
      g.strides[index] = value;
    for (auto [index, value] :
         llvm::enumerate(conv.getDilations().getValues<int64_t>()))
      g.dilations[index] = value;
    Location loc = op->getLoc();
    Value x = state.getPrimal(conv.getInputs()[0]);
    Value filter = state.getPrimal(conv.getInputs()[1]);
    dxs[0] = buildInputGradient(b, loc, g, dys[0], filter, inputType);
    dxs[1] = buildFilterGradient(b, loc, g, x, dys[0], filterType);
    dxs[2] = dys[0];
    return success();
  }
};

/// A zero padding: the cotangent's interior, where the source lies.
struct PadRule : Rule<PadRule, tensor::PadOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &, ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto pad = cast<tensor::PadOp>(op);
    Value constant = pad.getConstantPaddingValue();
    if (!constant || !matchPattern(constant, m_AnyZeroFloat()) ||
        !pad.getSourceType().hasStaticShape())
      return op->emitOpError("backward is generated for static zero "
                             "paddings only");
    Location loc = op->getLoc();
    int64_t rank = pad.getSourceType().getRank();
    dxs[0] = tensor::ExtractSliceOp::create(
        b, loc, pad.getSourceType(), dys[0], pad.getMixedLowPad(),
        getAsIndexOpFoldResult(b.getContext(), pad.getSourceType().getShape()),
        SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
    return success(); // the padding value is a constant
  }
};
} // namespace

void mlir::lamina::autodiff::registerConvolutionRules(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::Conv2DNchwFchwOp::attachInterface<Conv2DRule>(*context);
  });
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::PadOp::attachInterface<PadRule>(*context);
  });
}
