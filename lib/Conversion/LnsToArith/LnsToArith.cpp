//===- LnsToArith.cpp - Lower lns to int64 codes and arith ----------------===//

#include "lamina/Conversion/LnsToArith/LnsToArith.h"

#include "LinearKernels.h"
#include "lamina/Conversion/LnsToArith/CodeBuilder.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Lns/IR/LnsCodes.h"
#include "lamina/Support/VectorBits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_CONVERTLNSTOARITH
#include "lamina/Conversion/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::lns;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

LnsCodeTypeConverter::LnsCodeTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](NumType type) -> Type {
    return IntegerType::get(type.getContext(), 64);
  });
  addConversion([](RankedTensorType type) -> Type {
    if (!isa<NumType>(type.getElementType()))
      return type;
    return type.clone(IntegerType::get(type.getContext(), 64));
  });
}

static NumType numType(Value value) { return getLnsElementType(value.getType()); }

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

/// Applies `body` element by element: directly on scalars, through an
/// element-wise linalg.generic on tensors. `operands` are converted values
/// of one shape; the result has `resultType` (already converted).
Value lns::mapElements(
    OpBuilder &b, Location loc, ValueRange operands, Type resultType,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto tensorType = dyn_cast<RankedTensorType>(resultType);
  if (!tensorType)
    return body(b, loc, operands);
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, operands.front()),
      tensorType.getElementType());
  int64_t rank = tensorType.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps(operands.size() + 1, identity);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc,
                                ValueRange{body(nb, nloc, args.drop_back())});
      });
  return generic.getResult(0);
}

/// The sbdb tables of `type` as i32 constants, for `table` mode; none for
/// `ideal` mode.
static std::optional<SbdbTables> makeTables(OpBuilder &b, Location loc,
                                            SbdbMode mode, NumType type) {
  if (mode != SbdbMode::table)
    return std::nullopt;
  SbdbTables tables;
  tables.size = getSbdbTableSize(type);
  tables.values = computeInterleavedSbdbTable(type);
  auto tableType = RankedTensorType::get({2 * tables.size}, b.getI32Type());
  tables.interleaved = arith::ConstantOp::create(
      b, loc, DenseIntElementsAttr::get(tableType, ArrayRef(tables.values)));
  return tables;
}

static const SbdbTables *
pointerTo(const std::optional<SbdbTables> &tables) {
  return tables ? &*tables : nullptr;
}

namespace {
template <typename Op>
struct ElementwisePattern : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  using OpAdaptor = typename Op::Adaptor;

  /// The scalar computation on converted operands; `tables` is set for
  /// additions in `table` mode.
  virtual Value compute(CodeBuilder &codes, Op op, ValueRange args,
                        const SbdbTables *tables) const = 0;

  LogicalResult
  matchAndRewrite(Op op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type resultType = this->getTypeConverter()->convertType(op.getType());
    std::optional<SbdbTables> tables;
    if (auto mode = op->template getAttrOfType<SbdbModeAttr>("sbdb"))
      tables = makeTables(rewriter, op.getLoc(), mode.getValue(),
                          numType(op->getResult(0)));
    Value result = mapElements(
        rewriter, op.getLoc(), adaptor.getOperands(), resultType,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          CodeBuilder codes(b, loc);
          return compute(codes, op, args, pointerTo(tables));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct NegLowering : ElementwisePattern<NegOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, NegOp, ValueRange a,
                const SbdbTables *tables) const override {
    return c.neg(a[0]);
  }
};
struct AbsLowering : ElementwisePattern<AbsOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, AbsOp, ValueRange a,
                const SbdbTables *tables) const override {
    return c.abs(a[0]);
  }
};
struct SqrtLowering : ElementwisePattern<SqrtOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, SqrtOp, ValueRange a,
                const SbdbTables *tables) const override {
    return c.sqrt(a[0]);
  }
};
struct PowILowering : ElementwisePattern<PowIOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, PowIOp op, ValueRange a,
                const SbdbTables *tables) const override {
    return c.powi(a[0], op.getExponent());
  }
};
/// The arithmetic of two LNS numbers: the rhs is converted to the lhs's
/// base (the spec's mixed-base rule), then `Apply` combines the codes.
using BinaryCodes = Value (*)(CodeBuilder &, Value, Value, NumType,
                              const SbdbTables *);
template <typename Op, BinaryCodes Apply>
struct BinaryLowering : ElementwisePattern<Op> {
  using ElementwisePattern<Op>::ElementwisePattern;
  Value compute(CodeBuilder &c, Op op, ValueRange a,
                const SbdbTables *tables) const override {
    NumType type = numType(op.getLhs());
    return Apply(c, a[0], c.toBase(a[1], numType(op.getRhs()), type), type,
                 tables);
  }
};

Value mulCodes(CodeBuilder &c, Value x, Value y, NumType, const SbdbTables *) {
  return c.mul(x, y);
}
Value divCodes(CodeBuilder &c, Value x, Value y, NumType, const SbdbTables *) {
  return c.div(x, y);
}
Value addCodes(CodeBuilder &c, Value x, Value y, NumType type,
               const SbdbTables *tables) {
  return c.add(x, y, type, tables);
}
Value subCodes(CodeBuilder &c, Value x, Value y, NumType type,
               const SbdbTables *tables) {
  return c.sub(x, y, type, tables);
}

Value maxCodes(CodeBuilder &c, Value x, Value y, NumType, const SbdbTables *) {
  return c.maximum(x, y);
}
Value minCodes(CodeBuilder &c, Value x, Value y, NumType, const SbdbTables *) {
  return c.minimum(x, y);
}

using MulLowering = BinaryLowering<MulOp, mulCodes>;
using MaxLowering = BinaryLowering<MaxOp, maxCodes>;
using MinLowering = BinaryLowering<MinOp, minCodes>;

struct CmpLowering : ElementwisePattern<CmpOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, CmpOp op, ValueRange a,
                const SbdbTables *) const override {
    Value x = a[0];
    Value y = c.toBase(a[1], numType(op.getRhs()), numType(op.getLhs()));
    switch (op.getPredicate()) {
    case ComparePredicate::eq:
      return c.equal(x, y);
    case ComparePredicate::ne:
      return c.logicalNot(c.equal(x, y));
    case ComparePredicate::gt:
      return c.greater(x, y);
    case ComparePredicate::lt:
      return c.greater(y, x);
    case ComparePredicate::ge:
      return c.logicalNot(c.greater(y, x));
    case ComparePredicate::le:
      return c.logicalNot(c.greater(x, y));
    }
    llvm_unreachable("unknown lns.cmp predicate");
  }
};
struct ReluLowering : ElementwisePattern<ReluOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, ReluOp, ValueRange a,
                const SbdbTables *) const override {
    return c.relu(a[0]);
  }
};
struct ReluGradLowering : ElementwisePattern<ReluGradOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, ReluGradOp, ValueRange a,
                const SbdbTables *) const override {
    return c.reluGrad(a[0], a[1]);
  }
};

/// The functions the reference evaluates on the float value: decode, the
/// f64 function, encode.
template <typename Op>
struct FloatFunctionLowering : ElementwisePattern<Op> {
  using ElementwisePattern<Op>::ElementwisePattern;
  virtual Value apply(OpBuilder &b, Location loc, Value x) const = 0;
  Value compute(CodeBuilder &c, Op op, ValueRange a,
                const SbdbTables *) const override {
    return c.throughFloat(a[0], numType(op.getInput()),
                          [&](OpBuilder &b, Location loc, Value x) {
                            return apply(b, loc, x);
                          });
  }
};
struct LogLowering : FloatFunctionLowering<LogOp> {
  using FloatFunctionLowering::FloatFunctionLowering;
  Value apply(OpBuilder &b, Location loc, Value x) const override {
    return math::LogOp::create(b, loc, x);
  }
};
struct TanhLowering : FloatFunctionLowering<TanhOp> {
  using FloatFunctionLowering::FloatFunctionLowering;
  Value apply(OpBuilder &b, Location loc, Value x) const override {
    return math::TanhOp::create(b, loc, x);
  }
};
struct SigmoidLowering : FloatFunctionLowering<SigmoidOp> {
  using FloatFunctionLowering::FloatFunctionLowering;
  Value apply(OpBuilder &b, Location loc, Value x) const override {
    // 1 / (1 + exp(-x)), as torch computes it.
    Value one = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0));
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, one,
                                 arith::AddFOp::create(b, loc, one, e));
  }
};
struct ExpLowering : ElementwisePattern<ExpOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, ExpOp op, ValueRange a,
                const SbdbTables *) const override {
    return c.exp(a[0], numType(op.getInput()));
  }
};
struct LeakyReluLowering : ElementwisePattern<LeakyReluOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, LeakyReluOp, ValueRange a,
                const SbdbTables *) const override {
    return c.leakyRelu(a[0], a[1]);
  }
};
struct LeakyReluGradLowering : ElementwisePattern<LeakyReluGradOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, LeakyReluGradOp, ValueRange a,
                const SbdbTables *) const override {
    return c.leakyReluGrad(a[0], a[1], a[2]);
  }
};
using DivLowering = BinaryLowering<DivOp, divCodes>;
using AddLowering = BinaryLowering<AddOp, addCodes>;
using SubLowering = BinaryLowering<SubOp, subCodes>;

struct EncodeLowering : ElementwisePattern<EncodeOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, EncodeOp op, ValueRange a,
                const SbdbTables *tables) const override {
    return c.encode(a[0], numType(op.getResult()));
  }
};
struct DecodeLowering : ElementwisePattern<DecodeOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, DecodeOp op, ValueRange a,
                const SbdbTables *tables) const override {
    return c.decode(a[0], numType(op.getInput()),
                    cast<FloatType>(getElementTypeOrSelf(op.getType())));
  }
};
struct ChangeBaseLowering : ElementwisePattern<ChangeBaseOp> {
  using ElementwisePattern::ElementwisePattern;
  Value compute(CodeBuilder &c, ChangeBaseOp op, ValueRange a,
                const SbdbTables *tables) const override {
    return c.changeBase(a[0], numType(op.getInput()), numType(op.getResult()));
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Sequential reductions
//===----------------------------------------------------------------------===//

/// acc = init; for i in [0, count): acc = step(acc, i). Strictly in order.
Value lns::buildSequentialLoop(
    OpBuilder &b, Location loc, Value init, int64_t first, Value count,
    function_ref<Value(OpBuilder &, Location, Value, Value)> step) {
  Value lower = arith::ConstantIndexOp::create(b, loc, first);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lower, count, one, ValueRange{init},
      [&](OpBuilder &nb, Location nloc, Value index, ValueRange acc) {
        scf::YieldOp::create(nb, nloc,
                             ValueRange{step(nb, nloc, acc[0], index)});
      });
  return loop.getResult(0);
}

/// Builds the result of a reduction: a scalar from `element({})`, or a
/// tensor.generate whose element at each index is `element(indices)`.
static Value generateResult(
    OpBuilder &b, Location loc, Type resultType, ValueRange dynamicSizes,
    function_ref<Value(OpBuilder &, Location, ValueRange)> element) {
  auto tensorType = dyn_cast<RankedTensorType>(resultType);
  if (!tensorType)
    return element(b, loc, {});
  return tensor::GenerateOp::create(
             b, loc, tensorType, dynamicSizes,
             [&](OpBuilder &nb, Location nloc, ValueRange indices) {
               tensor::YieldOp::create(nb, nloc, element(nb, nloc, indices));
             })
      .getResult();
}

Value lns::index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// Sizes of the dynamic dims of `type`, taken from `source` dims `dims`.
static SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc,
                                       Type resultType,
                                       ArrayRef<std::pair<Value, int64_t>> dims) {
  SmallVector<Value> sizes;
  auto tensorType = dyn_cast<RankedTensorType>(resultType);
  if (!tensorType)
    return sizes;
  for (auto [d, source] : llvm::enumerate(dims))
    if (tensorType.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, source.first,
                                            source.second));
  return sizes;
}

namespace {
struct SumLowering : OpConversionPattern<SumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    bool pairwise = op.getOrder() == ReductionOrder::pairwise;
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    NumType type = numType(op.getInput());
    std::optional<SbdbTables> tables =
        makeTables(rewriter, loc, op.getSbdb(), type);
    ArrayRef<int64_t> reduced = op.getDims();
    SmallVector<int64_t> kept;
    for (int64_t d = 0; d < inputType.getRank(); ++d)
      if (!llvm::is_contained(reduced, d))
        kept.push_back(d);

    SmallVector<std::pair<Value, int64_t>> resultDims;
    for (int64_t d : kept)
      resultDims.push_back({input, d});
    Type resultType = getTypeConverter()->convertType(op.getType());
    Value result = generateResult(
        rewriter, loc, resultType,
        dynamicSizes(rewriter, loc, resultType, resultDims),
        [&](OpBuilder &b, Location l, ValueRange keptIndices) {
          // Reduced dims flattened row-major, in their original order.
          SmallVector<Value> sizes;
          Value count = index(b, l, 1);
          for (int64_t d : reduced) {
            sizes.push_back(tensor::DimOp::create(b, l, input, d));
            count = arith::MulIOp::create(b, l, count, sizes.back());
          }
          auto elementAt = [&](OpBuilder &nb, Location nl, Value flat) {
            SmallVector<Value> indices(inputType.getRank());
            for (auto [k, d] : llvm::enumerate(kept))
              indices[d] = keptIndices[k];
            for (int64_t r = reduced.size() - 1; r >= 0; --r) {
              indices[reduced[r]] = arith::RemUIOp::create(nb, nl, flat, sizes[r]);
              flat = arith::DivUIOp::create(nb, nl, flat, sizes[r]);
            }
            return tensor::ExtractOp::create(nb, nl, input, indices).getResult();
          };
          if (pairwise)
            return buildPairwiseSum(b, l, count, elementAt, type,
                                    pointerTo(tables));
          Value first = elementAt(b, l, index(b, l, 0));
          return buildSequentialLoop(
              b, l, first, 1, count,
              [&](OpBuilder &nb, Location nl, Value acc, Value i) {
                CodeBuilder codes(nb, nl);
                return codes.add(acc, elementAt(nb, nl, i), type,
                                 pointerTo(tables));
              });
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  /// The explicit, non-reference `pairwise` order: level by level, element
  /// i of the next level is add(v[2i], v[2i + 1]), an odd last element
  /// added to zero (itself), until one is left.
  static Value buildPairwiseSum(
      OpBuilder &b, Location loc, Value count,
      function_ref<Value(OpBuilder &, Location, Value)> elementAt,
      NumType type, const SbdbTables *tables) {
    Type i64 = b.getI64Type();
    Value zero = index(b, loc, 0), one = index(b, loc, 1),
          two = index(b, loc, 2);
    Value empty = tensor::EmptyOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic}, i64),
        ValueRange{count});
    Value values = buildSequentialLoop(
        b, loc, empty, 0, count,
        [&](OpBuilder &nb, Location nl, Value buffer, Value i) -> Value {
          return tensor::InsertOp::create(nb, nl, elementAt(nb, nl, i), buffer,
                                          ValueRange{i});
        });
    auto levels = scf::WhileOp::create(
        b, loc, TypeRange{count.getType(), values.getType()},
        ValueRange{count, values},
        [&](OpBuilder &nb, Location nl, ValueRange state) {
          Value more = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt,
                                             state[0], one);
          scf::ConditionOp::create(nb, nl, more, state);
        },
        [&](OpBuilder &nb, Location nl, ValueRange state) {
          Value length = state[0];
          Value half = arith::DivUIOp::create(
              nb, nl, arith::AddIOp::create(nb, nl, length, one), two);
          Value last = arith::SubIOp::create(nb, nl, length, one);
          Value next = buildSequentialLoop(
              nb, nl, state[1], 0, half,
              [&](OpBuilder &ib, Location il, Value buffer, Value i) -> Value {
                CodeBuilder codes(ib, il);
                Value left = arith::MulIOp::create(ib, il, i, two);
                Value right = arith::AddIOp::create(ib, il, left, one);
                Value exists = arith::CmpIOp::create(
                    ib, il, arith::CmpIPredicate::ult, right, length);
                Value a = tensor::ExtractOp::create(ib, il, buffer,
                                                    ValueRange{left});
                Value c = tensor::ExtractOp::create(
                    ib, il, buffer,
                    ValueRange{arith::MinUIOp::create(ib, il, right, last)});
                c = arith::SelectOp::create(
                    ib, il, exists, c, codes.constantCode(lns::codes::kZero));
                return tensor::InsertOp::create(
                    ib, il, codes.add(a, c, type, tables), buffer,
                    ValueRange{i});
              });
          scf::YieldOp::create(nb, nl, ValueRange{half, next});
        });
    return tensor::ExtractOp::create(b, loc, levels.getResult(1),
                                     ValueRange{zero});
  }
};

/// x[..., K]·Wᵀ (+ b): for each output, acc = Z, then k = 0..K−1 in order.
struct LinearLowering : OpConversionPattern<LinearOp> {
  LinearLowering(const TypeConverter &converter, MLIRContext *context,
                 unsigned vectorBits)
      : OpConversionPattern(converter, context), vectorBits(vectorBits) {}
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NumType type = numType(op.getInput());
    std::optional<SbdbTables> tables =
        makeTables(rewriter, loc, op.getSbdb(), type);
    Value input = adaptor.getInput();
    int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    // Weights and bias in another base are converted once, up front.
    Value weight = convertBase(rewriter, loc, adaptor.getWeight(),
                               numType(op.getWeight()), type);
    Value bias = adaptor.getBias()
                     ? convertBase(rewriter, loc, adaptor.getBias(),
                                   numType(op.getBias()), type)
                     : Value();
    Type resultType = getTypeConverter()->convertType(op.getType());
    if (rank == 2 && cast<RankedTensorType>(resultType).hasStaticShape()) {
      rewriter.replaceOp(op, buildLinearByK(rewriter, loc, input, weight, bias,
                                            type, pointerTo(tables),
                                            vectorBits));
      return success();
    }
    SmallVector<std::pair<Value, int64_t>> resultDims;
    for (int64_t d = 0; d < rank - 1; ++d)
      resultDims.push_back({input, d});
    resultDims.push_back({weight, 0});
    Value result = generateResult(
        rewriter, loc, resultType,
        dynamicSizes(rewriter, loc, resultType, resultDims),
        [&](OpBuilder &b, Location l, ValueRange indices) {
          Value n = indices.back();
          Value depth = tensor::DimOp::create(b, l, input, rank - 1);
          CodeBuilder codes(b, l);
          Value acc = buildSequentialLoop(
              b, l, codes.constantCode(lns::codes::kZero), 0, depth,
              [&](OpBuilder &nb, Location nl, Value acc, Value k) {
                SmallVector<Value> xIndex(indices.drop_back());
                xIndex.push_back(k);
                Value x = tensor::ExtractOp::create(nb, nl, input, xIndex);
                Value w = tensor::ExtractOp::create(nb, nl, weight,
                                                    ValueRange{n, k});
                CodeBuilder inner(nb, nl);
                return inner.add(acc, inner.mul(x, w), type,
                                 pointerTo(tables));
              });
          if (bias)
            acc = codes.add(acc, tensor::ExtractOp::create(b, l, bias, n),
                            type, pointerTo(tables));
          return acc;
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  static Value convertBase(OpBuilder &b, Location loc, Value codesTensor,
                           NumType from, NumType to) {
    if (from.hasSameBase(to))
      return codesTensor;
    return mapElements(b, loc, codesTensor, codesTensor.getType(),
                       [&](OpBuilder &nb, Location nl, ValueRange args) {
                         CodeBuilder codes(nb, nl);
                         return codes.changeBase(args[0], from, to);
                       });
  }

  unsigned vectorBits;
};

/// A[..., M, K]·B[..., K, N] with NumPy batch broadcasting.
struct MatmulLowering : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NumType type = numType(op.getLhs());
    std::optional<SbdbTables> tables =
        makeTables(rewriter, loc, op.getSbdb(), type);
    Value lhs = adaptor.getLhs();
    Value rhs = LinearLowering::convertBase(rewriter, loc, adaptor.getRhs(),
                                            numType(op.getRhs()), type);
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    int64_t rank = resultType.getRank();
    // Result dims come from whichever operand has them (batch dims broadcast
    // from the right; a size-1 batch dim takes index 0).
    SmallVector<std::pair<Value, int64_t>> resultDims;
    for (int64_t d = 0; d < rank - 2; ++d) {
      int64_t fromLhs = d - (rank - lhsType.getRank());
      bool useLhs = fromLhs >= 0 && lhsType.getDimSize(fromLhs) != 1;
      resultDims.push_back(useLhs ? std::make_pair(lhs, fromLhs)
                                  : std::make_pair(rhs, d - (rank - rhsType.getRank())));
    }
    resultDims.push_back({lhs, lhsType.getRank() - 2});
    resultDims.push_back({rhs, rhsType.getRank() - 1});

    Value result = generateResult(
        rewriter, loc, resultType,
        dynamicSizes(rewriter, loc, resultType, resultDims),
        [&](OpBuilder &b, Location l, ValueRange indices) {
          auto batchIndex = [&](OpBuilder &nb, Location nl,
                                RankedTensorType operandType) {
            SmallVector<Value> result;
            int64_t offset = rank - operandType.getRank();
            for (int64_t d = 0; d < operandType.getRank() - 2; ++d)
              result.push_back(operandType.getDimSize(d) == 1
                                   ? index(nb, nl, 0)
                                   : indices[d + offset]);
            return result;
          };
          Value m = indices[rank - 2], n = indices[rank - 1];
          Value depth = tensor::DimOp::create(b, l, lhs, lhsType.getRank() - 1);
          CodeBuilder codes(b, l);
          return buildSequentialLoop(
              b, l, codes.constantCode(lns::codes::kZero), 0, depth,
              [&](OpBuilder &nb, Location nl, Value acc, Value k) {
                SmallVector<Value> a = batchIndex(nb, nl, lhsType);
                a.append({m, k});
                SmallVector<Value> c = batchIndex(nb, nl, rhsType);
                c.append({k, n});
                CodeBuilder inner(nb, nl);
                return inner.add(
                    acc,
                    inner.mul(tensor::ExtractOp::create(nb, nl, lhs, a),
                              tensor::ExtractOp::create(nb, nl, rhs, c)),
                    type, pointerTo(tables));
              });
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Ops that merely carry LNS values
//===----------------------------------------------------------------------===//

/// Any other op whose operand, result or block-argument types mention LNS
/// numbers (tensor.empty, linalg.broadcast, reshapes, ...) is rebuilt with
/// the converted types; its regions keep their bodies.
struct ConvertCarrierTypes : ConversionPattern {
  ConvertCarrierTypes(const TypeConverter &converter, MLIRContext *context)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1,
                          context) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (isa<LnsDialect>(op->getDialect()) ||
        isa<func::FuncOp, func::ReturnOp, func::CallOp>(op))
      return failure();
    SmallVector<Type> resultTypes;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(),
                                                resultTypes)))
      return failure();
    OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                         op->getAttrs(), op->getSuccessors());
    state.propertiesAttr = op->getPropertiesAsAttribute();
    for (Region &region : op->getRegions()) {
      Region *newRegion = state.addRegion();
      rewriter.inlineRegionBefore(region, *newRegion, newRegion->begin());
      if (failed(rewriter.convertRegionTypes(newRegion, *getTypeConverter())))
        return failure();
    }
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};

struct ConvertLnsToArithPass
    : mlir::lamina::impl::ConvertLnsToArithBase<ConvertLnsToArithPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LnsCodeTypeConverter converter;
    ConversionTarget target(*context);
    target.addIllegalDialect<LnsDialect>();
    target.markUnknownOpDynamicallyLegal([&](Operation *op) {
      if (auto function = dyn_cast<FunctionOpInterface>(op))
        return converter.isSignatureLegal(
                   cast<FunctionType>(function.getFunctionType())) &&
               converter.isLegal(&function.getFunctionBody());
      return converter.isLegal(op) &&
             llvm::all_of(op->getRegions(), [&](Region &region) {
               return converter.isLegal(&region);
             });
    });
    RewritePatternSet patterns(context);
    if (failed(verifyVectorBits(getOperation(), vectorBits)))
      return signalPassFailure();
    populateLnsToArithConversionPatterns(converter, patterns, vectorBits);
    patterns.add<ConvertCarrierTypes>(converter, context);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::lamina::lns::populateLnsToArithConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    unsigned vectorBits) {
  patterns.add<LinearLowering>(converter, patterns.getContext(), vectorBits);
  patterns.add<NegLowering, AbsLowering, SqrtLowering, PowILowering,
               MulLowering, DivLowering, AddLowering, SubLowering,
               EncodeLowering, DecodeLowering, ChangeBaseLowering,
               ConstantLowering, SumLowering, MatmulLowering,
               MaxLowering, MinLowering, CmpLowering, ReluLowering,
               ReluGradLowering, ExpLowering, LogLowering, TanhLowering,
               SigmoidLowering, LeakyReluLowering, LeakyReluGradLowering>(
      converter, patterns.getContext());
}
