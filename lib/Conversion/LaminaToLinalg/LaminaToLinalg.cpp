//===- LaminaToLinalg.cpp - Lower lamina ops to linalg, tensor, arith -----===//

#include "DropoutMask.h"
#include "Patterns.h"

#include "lamina/Conversion/LaminaToLinalg/EpilogueMath.h"
#include "lamina/Conversion/LaminaToLinalg/Philox.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Lns/IR/Lns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_CONVERTLAMINATOLINALG
#include "lamina/Conversion/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// x[..., K] as [M, K]: leading dims flattened (rank 1 gets M = 1).
static Value flattenRows(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (rank == 2)
    return x;
  if (rank == 1) {
    auto rowType = RankedTensorType::get({1, type.getDimSize(0)},
                                         type.getElementType());
    SmallVector<OpFoldResult> shape = {b.getIndexAttr(1),
                                       tensor::getMixedSize(b, loc, x, 0)};
    return tensor::ExpandShapeOp::create(b, loc, rowType, x,
                                         ArrayRef<ReassociationIndices>{{0, 1}},
                                         shape);
  }
  ReassociationIndices rows;
  for (int64_t d = 0; d < rank - 1; ++d)
    rows.push_back(d);
  return tensor::CollapseShapeOp::create(
      b, loc, x, ArrayRef<ReassociationIndices>{rows, {rank - 1}});
}

/// A [M, N] value back to `resultType` = [..., N], the leading dims taken
/// from `input` (x[..., K]).
static Value restoreRows(OpBuilder &b, Location loc, Value value,
                         RankedTensorType resultType, Value input) {
  int64_t rank = resultType.getRank();
  if (rank == 2)
    return value;
  if (rank == 1)
    return tensor::CollapseShapeOp::create(
        b, loc, resultType, value, ArrayRef<ReassociationIndices>{{0, 1}});
  ReassociationIndices rows;
  SmallVector<OpFoldResult> shape;
  for (int64_t d = 0; d < rank - 1; ++d) {
    rows.push_back(d);
    shape.push_back(tensor::getMixedSize(b, loc, input, d));
  }
  shape.push_back(tensor::getMixedSize(b, loc, value, 1));
  return tensor::ExpandShapeOp::create(
      b, loc, resultType, value,
      ArrayRef<ReassociationIndices>{rows, {rank - 1}}, shape);
}

Value mlir::lamina::emptyLike(OpBuilder &b, Location loc, Value shapeSource,
                             Type elementType) {
  return tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, shapeSource), elementType);
}

//===----------------------------------------------------------------------===//
// Element-wise epilogue
//===----------------------------------------------------------------------===//

namespace {
/// Element-wise steps after a matmul, in the spec's order.
struct EpilogueSteps {
  Value bias;                    // [N], broadcast over the last dimension
  ActivationKindAttr activation;
  DropoutAttr dropout;           // only active dropouts are applied
  Value seed;
  Value offsetBase;              // i64 added to the dropout's offset, or null
  Value rank;                    // index: the process (partitioned programs)
  RankedTensorType valueType;    // the dropped value's (per-rank) type
  Value keepMask;                // i8, the source's shape: precomputed mask
  /// The backward's `activation_grad` of a matmul (dy·W): the value times
  /// `derivative`′(derivativeInput), the source's shape; first of all.
  ActivationKindAttr derivative;
  Value derivativeInput;
  /// A rotary embedding's tables (lamina.fused_linear's rope epilogue).
  Value ropeCos, ropeSin;

  bool empty() const {
    return !bias && !activation && !(dropout && dropout.isActive()) &&
           !derivative && !ropeCos;
  }
  DropoutDraw draw() const {
    return {dropout, seed, offsetBase, rank, valueType};
  }
};
} // namespace

/// Row-major strides of `source` as index values.
static SmallVector<Value> buildStrides(OpBuilder &b, Location loc,
                                       Value source) {
  int64_t rank = cast<RankedTensorType>(source.getType()).getRank();
  SmallVector<Value> strides(rank);
  Value stride = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    if (d > 0)
      stride = arith::MulIOp::create(
          b, loc, stride,
          getValueOrCreateConstantIndexOp(
              b, loc, tensor::getMixedSize(b, loc, source, d)));
  }
  return strides;
}

/// One linalg.generic applying `steps` to `source` (any rank, floats),
/// computing in f32 and producing `resultElt`. Dropout masks use the
/// element's row-major index in `source`: drawn beforehand in groups of
/// four where the last dim allows, else one Philox call per element.
static Value buildEpilogue(OpBuilder &b, Location loc, Value source,
                           Type resultElt, EpilogueSteps steps) {
  if (!steps.keepMask && hasGroupedKeepMask(source, steps.draw()))
    steps.keepMask = buildKeepMaskLike(b, loc, source, steps.draw());
  auto sourceType = cast<RankedTensorType>(source.getType());
  int64_t rank = sourceType.getRank();
  MLIRContext *context = b.getContext();
  Type f32 = b.getF32Type();
  bool inPlace = sourceType.getElementType() == resultElt;

  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  if (steps.bias) {
    // The bias spans the trailing dims (one, or two for a [N/B, B] view).
    int64_t biasRank = cast<RankedTensorType>(steps.bias.getType()).getRank();
    SmallVector<AffineExpr> biasDims;
    for (int64_t d = rank - biasRank; d < rank; ++d)
      biasDims.push_back(b.getAffineDimExpr(d));
    inputs.push_back(steps.bias);
    maps.push_back(AffineMap::get(rank, 0, biasDims, context));
  }
  if (!inPlace) {
    inputs.push_back(source);
    maps.push_back(identity);
  }
  if (steps.keepMask) {
    inputs.push_back(steps.keepMask);
    maps.push_back(identity);
  }
  if (steps.derivative) {
    inputs.push_back(steps.derivativeInput);
    maps.push_back(identity);
  }
  Value init = inPlace ? source : emptyLike(b, loc, source, resultElt);
  maps.push_back(identity);

  bool dropout = steps.dropout && steps.dropout.isActive();
  SmallVector<Value> strides;
  if (dropout && !steps.keepMask)
    strides = buildStrides(b, loc, source);

  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto toF32 = [&](Value v) -> Value {
          return v.getType() == f32 ? v
                                    : arith::ExtFOp::create(nb, nloc, f32, v);
        };
        unsigned next = 0;
        Value bias = steps.bias ? args[next++] : Value();
        Value value = toF32(inPlace ? args.back() : args[next++]);
        Value mask = steps.keepMask ? args[next++] : Value();
        if (steps.derivative)
          value = buildActivationDerivative(nb, nloc,
                                            steps.derivative.getValue(),
                                            toF32(args[next++]), value);
        if (bias)
          value = arith::AddFOp::create(nb, nloc, value, toF32(bias));
        if (steps.activation)
          value = buildActivation(nb, nloc, steps.activation.getValue(), value);
        if (dropout) {
          double p = steps.dropout.getProbability();
          Value keep;
          if (mask) {
            keep = arith::TruncIOp::create(nb, nloc, nb.getI1Type(), mask);
          } else {
            Value index = arith::ConstantIndexOp::create(nb, nloc, 0);
            for (int64_t d = 0; d < rank; ++d)
              index = arith::AddIOp::create(
                  nb, nloc, index,
                  arith::MulIOp::create(nb, nloc,
                                        linalg::IndexOp::create(nb, nloc, d),
                                        strides[d]));
            Value index64 = buildWholeTensorIndex(
                nb, nloc,
                arith::IndexCastUIOp::create(nb, nloc, nb.getI64Type(), index),
                steps.draw(), /*unit=*/1);
            keep = buildDropoutKeep(nb, nloc, index64, steps.seed,
                                    steps.dropout.getOffset(), steps.offsetBase,
                                    buildDropoutStream(nb, nloc, steps.dropout, steps.rank), p);
          }
          value = buildDropoutApply(nb, nloc, value, keep, p);
        }
        if (resultElt != f32)
          value = arith::TruncFOp::create(nb, nloc, resultElt, value);
        linalg::YieldOp::create(nb, nloc, value);
      });
  setLoweredStage(generic, LoweredStage::epilogue);
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

Value mlir::lamina::buildZeroAccumulator(OpBuilder &b, Location loc,
                                         ArrayRef<OpFoldResult> shape,
                                         Type accElt) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, accElt);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accElt));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

/// x[..., K]·W[N, K]ᵀ as a [M, N] accumulator (f32 for f16/bf16 inputs).
static Value buildMatmul(OpBuilder &b, Location loc, Value input,
                         Value weight, Type accElt) {
  Value rows = flattenRows(b, loc, input);
  Value acc = buildZeroAccumulator(
      b, loc,
      {tensor::getMixedSize(b, loc, rows, 0),
       tensor::getMixedSize(b, loc, weight, 0)},
      accElt);

  MLIRContext *context = b.getContext();
  AffineExpr m, n, k;
  bindDims(context, m, n, k);
  auto maps = b.getAffineMapArrayAttr(
      {AffineMap::get(3, 0, {m, k}, context),
       AffineMap::get(3, 0, {n, k}, context),
       AffineMap::get(3, 0, {m, n}, context)});
  auto matmul = linalg::MatmulOp::create(
      b, loc, TypeRange{acc.getType()}, ValueRange{rows, weight},
      ValueRange{acc}, {b.getNamedAttr("indexing_maps", maps)});
  setLoweredStage(matmul, LoweredStage::matmul);
  return matmul.getResult(0);
}

/// W[N, K] packed into Wp[N/B, K, B], or with `pairs` into
/// Wp[N/B, K/2, B, 2] (Wp[n1, k2, n0, p] = W[n1·B + n0, 2·k2 + p]). A weight
/// that is the transpose of T[K, N] (the backward's dx = dy·W,
/// dW = dyᵀ·x) is packed from T itself: Wp[n1, k, n0] = T[k, n1·B + n0]
/// moves rows of B contiguous elements, and the transpose is left unused.
static Value packWeight(OpBuilder &b, Location loc, Value weight,
                        int64_t block, bool pairs) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t n = weightType.getDimSize(0), k = weightType.getDimSize(1);
  SmallVector<int64_t> shape = {n / block, k, block};
  SmallVector<OpFoldResult> tiles = {b.getIndexAttr(block)};
  if (pairs) {
    shape = {n / block, k / 2, block, 2};
    tiles.push_back(b.getIndexAttr(2));
  }
  Value init =
      tensor::EmptyOp::create(b, loc, shape, weightType.getElementType());
  auto transpose = weight.getDefiningOp<linalg::TransposeOp>();
  if (transpose && transpose.getPermutation() == ArrayRef<int64_t>{1, 0})
    return linalg::PackOp::create(
               b, loc, transpose.getInput(), init,
               /*innerDimsPos=*/pairs ? SmallVector<int64_t>{1, 0}
                                      : SmallVector<int64_t>{1},
               tiles, /*paddingValue=*/std::nullopt, /*outerDimsPerm=*/{1, 0})
        .getResult();
  return linalg::PackOp::create(b, loc, weight, init,
                                /*innerDimsPos=*/pairs
                                    ? SmallVector<int64_t>{0, 1}
                                    : SmallVector<int64_t>{0},
                                tiles)
      .getResult();
}

/// The body of a packed matmul: acc + x·w, widened to the accumulator's
/// type.
static void buildMultiplyAdd(OpBuilder &b, Location loc, ValueRange args,
                             Type accElt) {
  auto widen = [&](Value v) -> Value {
    return v.getType() == accElt ? v : arith::ExtFOp::create(b, loc, accElt, v);
  };
  Value product =
      arith::MulFOp::create(b, loc, widen(args[0]), widen(args[1]));
  linalg::YieldOp::create(
      b, loc, ValueRange{arith::AddFOp::create(b, loc, args[2], product)});
}

/// The packed matmul's generic: `maps` over its loops, all parallel but the
/// last (k), or the last two (k2, p) with pairs of k, tagged as the matmul
/// stage and with the `layout` it follows, which the schedules read.
static Value buildPackedMatmulGeneric(OpBuilder &b, Location loc,
                                      ValueRange inputs, Value acc,
                                      ArrayRef<AffineMap> maps,
                                      CpuMatmulAttr layout) {
  Type accElt = layout.getAccumulator();
  unsigned reductions = layout.getKGroup() == 2 ? 2 : 1;
  SmallVector<utils::IteratorType> iterators(
      maps.front().getNumDims() - reductions, utils::IteratorType::parallel);
  iterators.append(reductions, utils::IteratorType::reduction);
  auto matmul = linalg::GenericOp::create(
      b, loc, acc.getType(), inputs, ValueRange{acc}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        buildMultiplyAdd(nb, nloc, args, accElt);
      });
  setLoweredStage(matmul, LoweredStage::matmul);
  matmul->setAttr(LaminaDialect::kCodegenAttrName, layout);
  return matmul.getResult(0);
}

/// x[..., K]·W[N, K]ᵀ with W packed into Wp[N/B, K, B]: a [M, N/B, B]
/// accumulator, the same memory as row-major [M, N]. With pairs of k, x is read
/// as [M, K/2, 2] and W packed into Wp[N/B, K/2, B, 2].
static Value buildBlockedMatmul(OpBuilder &b, Location loc, Value input,
                                Value weight, CpuMatmulAttr layout) {
  Type accElt = layout.getAccumulator();
  int64_t block = layout.getWeightBlock();
  bool pairs = layout.getKGroup() == 2;
  Value rows = flattenRows(b, loc, input);
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t n = weightType.getDimSize(0), k = weightType.getDimSize(1);
  Value packed = packWeight(b, loc, weight, block, pairs);
  OpFoldResult m = tensor::getMixedSize(b, loc, rows, 0);

  Value acc = buildZeroAccumulator(
      b, loc, {m, b.getIndexAttr(n / block), b.getIndexAttr(block)}, accElt);

  MLIRContext *context = b.getContext();
  if (pairs) {
    auto rowsType = cast<RankedTensorType>(rows.getType());
    rows = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get({rowsType.getDimSize(0), k / 2, 2},
                              rowsType.getElementType()),
        rows, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{m, b.getIndexAttr(k / 2), b.getIndexAttr(2)});
    AffineExpr m, n1, n0, k2, p;
    bindDims(context, m, n1, n0, k2, p);
    SmallVector<AffineMap> maps = {
        AffineMap::get(5, 0, {m, k2, p}, context),
        AffineMap::get(5, 0, {n1, k2, n0, p}, context),
        AffineMap::get(5, 0, {m, n1, n0}, context)};
    return buildPackedMatmulGeneric(b, loc, {rows, packed}, acc, maps, layout);
  }
  AffineExpr mm, n1, n0, kk;
  bindDims(context, mm, n1, n0, kk);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {mm, kk}, context),
                                 AffineMap::get(4, 0, {n1, kk, n0}, context),
                                 AffineMap::get(4, 0, {mm, n1, n0}, context)};
  return buildPackedMatmulGeneric(b, loc, {rows, packed}, acc, maps, layout);
}

/// The source T[K, M] of an input x = Tᵀ (a 2-D transpose), or null.
static Value getTransposeSource(Value input) {
  auto transpose = input.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {};
  return transpose.getInput();
}

/// Tᵀ·W[N, K]ᵀ for T[K, M], with Tᵀ packed into Xp[M/P, K, P]
/// (Xp[m1, k, m0] = T[k, m1·P + m0], rows of P contiguous elements moved
/// from T) and W into Wp[N/B, K, B]: a generic over (m1, m0, n1, n0, k)
/// whose [M/P, P, N/B, B] accumulator is returned as [M, N/B, B]. With
/// `pairs`, Xp[M/P, K/2, P, 2] and Wp[N/B, K/2, B, 2], over
/// (m1, m0, n1, n0, k2, p).
static Value buildPanelMatmul(OpBuilder &b, Location loc, Value source,
                              Value weight, CpuMatmulAttr layout) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  int64_t k = sourceType.getDimSize(0), m = sourceType.getDimSize(1);
  int64_t n = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  int64_t panel = layout.getRowPanel(), block = layout.getWeightBlock();
  bool pairs = layout.getKGroup() == 2;
  Type accElt = layout.getAccumulator();
  SmallVector<int64_t> panelsShape = {m / panel, k, panel};
  SmallVector<int64_t> innerDims = {1};
  SmallVector<OpFoldResult> tiles = {b.getIndexAttr(panel)};
  if (pairs) {
    panelsShape = {m / panel, k / 2, panel, 2};
    innerDims = {1, 0};
    tiles.push_back(b.getIndexAttr(2));
  }
  Value panels =
      linalg::PackOp::create(
          b, loc, source,
          tensor::EmptyOp::create(b, loc, panelsShape,
                                  sourceType.getElementType()),
          innerDims, tiles, /*paddingValue=*/std::nullopt,
          /*outerDimsPerm=*/{1, 0})
          .getResult();
  Value packed = packWeight(b, loc, weight, block, pairs);
  Value acc = buildZeroAccumulator(
      b, loc,
      {b.getIndexAttr(m / panel), b.getIndexAttr(panel),
       b.getIndexAttr(n / block), b.getIndexAttr(block)},
      accElt);

  MLIRContext *context = b.getContext();
  SmallVector<AffineMap> maps;
  if (pairs) {
    AffineExpr m1, m0, n1, n0, k2, p;
    bindDims(context, m1, m0, n1, n0, k2, p);
    maps = {AffineMap::get(6, 0, {m1, k2, m0, p}, context),
            AffineMap::get(6, 0, {n1, k2, n0, p}, context),
            AffineMap::get(6, 0, {m1, m0, n1, n0}, context)};
  } else {
    AffineExpr m1, m0, n1, n0, kk;
    bindDims(context, m1, m0, n1, n0, kk);
    maps = {AffineMap::get(5, 0, {m1, kk, m0}, context),
            AffineMap::get(5, 0, {n1, kk, n0}, context),
            AffineMap::get(5, 0, {m1, m0, n1, n0}, context)};
  }
  Value matmul =
      buildPackedMatmulGeneric(b, loc, {panels, packed}, acc, maps, layout);
  return tensor::CollapseShapeOp::create(
      b, loc, matmul,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// The accumulator of a plain matmul: f32 for f16/bf16 inputs.
static Type accumulatorType(OpBuilder &b, Type inputElt) {
  return inputElt.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : inputElt;
}

/// `result` [..., N] viewed as [..., heads, head_dim], rotated by
/// lamina.rope (interleaved pairs) with `cos` and `sin`, and viewed back.
static Value buildRopeAfter(OpBuilder &b, Location loc, Value result,
                            Value cos, Value sin) {
  auto type = cast<RankedTensorType>(result.getType());
  int64_t headDim = 2 * cast<RankedTensorType>(cos.getType()).getShape().back();
  SmallVector<int64_t> heads(type.getShape().drop_back());
  heads.append({type.getShape().back() / headDim, headDim});
  SmallVector<ReassociationIndices> groups;
  for (int64_t dim = 0; dim + 1 < type.getRank(); ++dim)
    groups.push_back({dim});
  groups.push_back({type.getRank() - 1, type.getRank()});
  Value view = tensor::ExpandShapeOp::create(b, loc, type.clone(heads),
                                             result, groups);
  Value rotated = RopeOp::create(b, loc, type.clone(heads), view, cos, sin,
                                 RopePairs::interleaved, StringAttr());
  return tensor::CollapseShapeOp::create(b, loc, type, rotated, groups);
}

/// A float linear layer: matmul, then one epilogue, then the result shape.
/// The matmul follows `layout` (verified against the op): its weight packed
/// in blocks, its transposed input in panels, k in pairs; without one it is
/// a plain linalg.matmul.
static Value buildFloatLinear(OpBuilder &b, Location loc, Value input,
                              Value weight, EpilogueSteps steps,
                              RankedTensorType resultType,
                              CpuMatmulAttr layout) {
  bool blocked = bool(layout);
  // Unpacked, a rotary embedding is lamina.rope's own generic after the
  // matmul: its epilogue reads pair partners within blocks of features.
  if (steps.ropeCos && !blocked) {
    Value result = buildFloatLinear(b, loc, input, weight, EpilogueSteps(),
                                    resultType, layout);
    return buildRopeAfter(b, loc, result, steps.ropeCos, steps.ropeSin);
  }
  Type inputElt = cast<RankedTensorType>(input.getType()).getElementType();
  Type accElt =
      blocked ? layout.getAccumulator() : accumulatorType(b, inputElt);
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t weightBlock = blocked ? layout.getWeightBlock() : 0;
  Value acc =
      blocked && layout.getRowPanel()
          ? buildPanelMatmul(b, loc, getTransposeSource(input), weight, layout)
      : blocked ? buildBlockedMatmul(b, loc, input, weight, layout)
                : buildMatmul(b, loc, input, weight, accElt);
  if (blocked && hasGroupedKeepMask(acc, steps.draw()))
    steps.keepMask = buildBlockedKeepMask(b, loc, acc, steps.draw());
  if (steps.derivative) {
    // Viewed like the accumulator: [M, N], or [M, N/B, B] when blocked.
    Value rows = flattenRows(b, loc, steps.derivativeInput);
    if (blocked) {
      auto rowsType = cast<RankedTensorType>(rows.getType());
      int64_t n = weightType.getDimSize(0);
      SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, rows, 0),
                                         b.getIndexAttr(n / weightBlock),
                                         b.getIndexAttr(weightBlock)};
      rows = tensor::ExpandShapeOp::create(
          b, loc,
          RankedTensorType::get({rowsType.getDimSize(0), n / weightBlock,
                                 weightBlock},
                                rowsType.getElementType()),
          rows, ArrayRef<ReassociationIndices>{{0}, {1, 2}}, shape);
    }
    steps.derivativeInput = rows;
  }
  if (blocked && steps.bias) {
    int64_t n = weightType.getDimSize(0);
    auto biasType = cast<RankedTensorType>(steps.bias.getType());
    steps.bias = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get({n / weightBlock, weightBlock},
                              biasType.getElementType()),
        steps.bias, ArrayRef<ReassociationIndices>{{0, 1}});
  }
  Type resultElt = resultType.getElementType();
  if (steps.ropeCos) {
    acc = buildRopeEpilogue(b, loc, acc, steps.ropeCos, steps.ropeSin,
                            resultType, resultElt);
  } else if (!steps.empty() ||
             cast<RankedTensorType>(acc.getType()).getElementType() !=
                 resultElt) {
    acc = buildEpilogue(b, loc, acc, resultElt, steps);
  }
  if (blocked)
    acc = tensor::CollapseShapeOp::create(
        b, loc, acc, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  return restoreRows(b, loc, acc, resultType, input);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Whether `value` holds floats, which this file lowers; other number
/// formats lower in their own files (LnsLayers.cpp).
static bool holdsFloats(Value value) {
  return isa<FloatType>(getElementTypeOrSelf(value.getType()));
}

namespace {
struct FusedLinearToLinalg : OpRewritePattern<FusedLinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedLinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!holdsFloats(op.getInput()))
      return failure();
    EpilogueSteps steps;
    steps.bias = op.getBias();
    steps.activation = op.getActivationAttr();
    steps.dropout = op.getDropoutAttr();
    steps.seed = op.getSeed();
    steps.offsetBase = op.getOffsetBase();
    steps.rank = op.getRank();
    steps.valueType = op.getType();
    steps.ropeCos = op.getRopeCos();
    steps.ropeSin = op.getRopeSin();
    rewriter.replaceOp(op, buildFloatLinear(rewriter, loc, op.getInput(),
                                            op.getWeight(), steps,
                                            op.getType(), getCpuMatmul(op)));
    return success();
  }
};

struct MatmulToLinalg : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!holdsFloats(op.getInput()))
      return failure();
    rewriter.replaceOp(op, buildFloatLinear(rewriter, op.getLoc(),
                                            op.getInput(), op.getWeight(),
                                            EpilogueSteps(), op.getType(),
                                            getCpuMatmul(op)));
    return success();
  }
};

struct BiasAddToLinalg : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp op,
                                PatternRewriter &rewriter) const override {
    if (!holdsFloats(op.getInput()))
      return failure();
    EpilogueSteps steps;
    steps.bias = op.getBias();
    rewriter.replaceOp(op, buildEpilogue(rewriter, op.getLoc(), op.getInput(),
                                         op.getType().getElementType(),
                                         steps));
    return success();
  }
};

struct ActivationToLinalg : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op,
                                PatternRewriter &rewriter) const override {
    EpilogueSteps steps;
    steps.activation = op.getKindAttr();
    rewriter.replaceOp(op, buildEpilogue(rewriter, op.getLoc(), op.getInput(),
                                         op.getType().getElementType(),
                                         steps));
    return success();
  }
};

struct DropoutToLinalg : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getConfig().isActive()) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    EpilogueSteps steps;
    steps.dropout = op.getConfig();
    steps.seed = op.getSeed();
    steps.offsetBase = op.getOffsetBase();
    steps.rank = op.getRank();
    steps.valueType = op.getType();
    rewriter.replaceOp(op, buildEpilogue(rewriter, op.getLoc(), op.getInput(),
                                         op.getType().getElementType(),
                                         steps));
    return success();
  }
};

/// In a single-rank program every sync is the identity.
struct SyncToIdentity : OpRewritePattern<SyncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SyncOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// qkv = x·Wᵀ + b viewed as [..., heads, hd, 3] and split on the last dim.
struct FusedQKVToLinalg : OpRewritePattern<FusedQKVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedQKVOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    int64_t rank = inputType.getRank();
    int64_t rows = cast<RankedTensorType>(op.getWeight().getType())
                       .getDimSize(0);
    SmallVector<int64_t> qkvShape(inputType.getShape().drop_back());
    qkvShape.push_back(rows);
    auto qkvType = RankedTensorType::get(qkvShape, qType.getElementType());

    EpilogueSteps steps;
    steps.bias = op.getBias();
    Value qkv = buildFloatLinear(rewriter, loc, op.getInput(), op.getWeight(),
                                 steps, qkvType, getCpuMatmul(op));

    // [..., 3·heads·hd] → [..., heads, hd, 3]
    SmallVector<int64_t> splitShape(qType.getShape());
    splitShape.push_back(3);
    auto splitType = RankedTensorType::get(splitShape, qType.getElementType());
    SmallVector<ReassociationIndices> reassociation;
    SmallVector<OpFoldResult> outputShape;
    for (int64_t d = 0; d < rank - 1; ++d) {
      reassociation.push_back({d});
      outputShape.push_back(tensor::getMixedSize(rewriter, loc, qkv, d));
    }
    reassociation.push_back({rank - 1, rank, rank + 1});
    for (int64_t size : ArrayRef(splitShape).take_back(3))
      outputShape.push_back(rewriter.getIndexAttr(size));
    Value split = tensor::ExpandShapeOp::create(rewriter, loc, splitType, qkv,
                                                reassociation, outputShape);

    SmallVector<Value> results;
    for (int64_t t = 0; t < 3; ++t) {
      SmallVector<OpFoldResult> offsets(rank + 2, rewriter.getIndexAttr(0));
      offsets.back() = rewriter.getIndexAttr(t);
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, split);
      sizes.back() = rewriter.getIndexAttr(1);
      SmallVector<OpFoldResult> strides(rank + 2, rewriter.getIndexAttr(1));
      results.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, qType, split, offsets, sizes, strides));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// A cross-entropy op (or its gradient) on a rank's block of the classes.
static bool isVocabularyParallelLoss(Operation *op) {
  if (auto loss = dyn_cast<CrossEntropyOp>(op))
    return loss.getShards().has_value();
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
    return grad.getShards().has_value();
  return false;
}

struct ConvertLaminaToLinalgPass
    : mlir::lamina::impl::ConvertLaminaToLinalgBase<ConvertLaminaToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    // Collectives must have been partitioned away in multi-rank programs.
    WalkResult unpartitioned = root->walk([](Operation *op) {
      if (isVocabularyParallelLoss(op) &&
          !SymbolTable::lookupNearestSymbolFrom(
              op,
              StringAttr::get(op->getContext(), LaminaDialect::kGridName))) {
        op->emitOpError("is vocabulary parallel, but there is no @")
            << LaminaDialect::kGridName
            << " grid to all-reduce over (lamina-partition makes it)";
        return WalkResult::interrupt();
      }
      auto layer = dyn_cast<LinearLayerOpInterface>(op);
      bool hasSync = isa<SyncOp>(op) || (layer && layer.getLayerSync());
      std::optional<int64_t> worldSize = getWorldSize(op);
      if (!hasSync || !worldSize || *worldSize == 1)
        return WalkResult::advance();
      op->emitError("sync point in a program of world size ")
          << *worldSize
          << " must be partitioned into collectives before lowering";
      return WalkResult::interrupt();
    });
    if (unpartitioned.wasInterrupted())
      return signalPassFailure();
    // Row panels are packed from a transposed input, which only the
    // matmul's producer shows.
    WalkResult misplacedPanels = root->walk([](Operation *op) {
      CpuMatmulAttr layout = getCpuMatmul(op);
      if (!layout || !layout.getRowPanel() ||
          getTransposeSource(getMatmulOperands(op).first))
        return WalkResult::advance();
      op->emitError("row_panel ")
          << layout.getRowPanel()
          << " packs a transposed input, but the input is not a "
             "linalg.transpose of a 2-D tensor";
      return WalkResult::interrupt();
    });
    if (misplacedPanels.wasInterrupted())
      return signalPassFailure();

    // The backward's activation derivatives join the matmuls producing
    // their cotangents first.
    RewritePatternSet fusion(&getContext());
    populateActivationGradFusionPatterns(fusion);
    if (failed(applyPatternsGreedily(root, std::move(fusion))))
      return signalPassFailure();

    ConversionTarget target(getContext());
    target.addIllegalDialect<LaminaDialect>();
    // Lowered with the collectives (convert-shard-to-lamina-mpi).
    target.addLegalOp<ReduceReplicasOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateLaminaToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(root, target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

namespace {
/// activation_grad(x, matmul(dy, Wᵀ)) — the backward's dH = (dY·W)·act′(x) —
/// as one matmul whose epilogue multiplies by act′(x): no pass of its own
/// over dH.
struct FuseActivationGradIntoMatmul : OpRewritePattern<ActivationGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationGradOp op,
                                PatternRewriter &rewriter) const override {
    auto matmul = op.getCotangent().getDefiningOp<MatmulOp>();
    CpuMatmulAttr layout = matmul ? getCpuMatmul(matmul) : CpuMatmulAttr();
    if (!matmul || getFusedActivationGrad(matmul) != op ||
        !holdsFloats(matmul.getInput()) || (layout && layout.getRowPanel()))
      return failure();
    EpilogueSteps steps;
    steps.derivative = op.getKindAttr();
    steps.derivativeInput = op.getInput();
    Value fused = buildFloatLinear(rewriter, op.getLoc(), matmul.getInput(),
                                   matmul.getWeight(), steps, op.getType(),
                                   layout);
    rewriter.replaceOp(op, fused);
    rewriter.eraseOp(matmul);
    return success();
  }
};
} // namespace

void mlir::lamina::populateActivationGradFusionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseActivationGradIntoMatmul>(patterns.getContext());
}

void mlir::lamina::populateLaminaToLinalgPatterns(
    RewritePatternSet &patterns) {
  populateLayerToFusedLinearPatterns(patterns);
  patterns.add<FusedLinearToLinalg, MatmulToLinalg, FusedQKVToLinalg,
               BiasAddToLinalg, ActivationToLinalg, DropoutToLinalg,
               SyncToIdentity>(patterns.getContext());
  populateNormalizationToLinalgPatterns(patterns);
  populateDerivativesToLinalgPatterns(patterns);
  populateModelOpsToLinalgPatterns(patterns);
  populateRopeToLinalgPatterns(patterns);
  populateLnsLayersToLnsPatterns(patterns);
}
