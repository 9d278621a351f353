//===- ModelOps.cpp - Embedding, masked fill and cross-entropy to linalg --===//
//
// `lamina.embedding` is a gather generic (tensor.extract of the weight at
// the clamped index); its gradient a loop over the tokens adding each
// cotangent row into its weight row, in token order (as PyTorch's CPU
// kernel accumulates). `lamina.masked_fill` is a select generic with the
// mask broadcast by its indexing map. `lamina.cross_entropy` and its
// gradient are row reductions (max, Σ exp), the target's logit read at its
// column, and an element-wise generic. Vocabulary parallel, each rank holds
// a block of the classes: the three row statistics are all-reduced over the
// ranks (shard collectives, lowered to MPI later), as Megatron's loss does.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "lamina/Lamina/Analysis/Collectives.h"
#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
SmallVector<utils::IteratorType> parallelIterators(int64_t rank) {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// A tensor of `shape` filled with `value`.
Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
             double value) {
  Value init = tensor::EmptyOp::create(b, loc, shape, element);
  return linalg::FillOp::create(b, loc, floatConstant(b, loc, element, value),
                                init)
      .getResult(0);
}

/// `index` (i64) as an index clamped to [0, size).
Value clampedIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value asIndex = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::ConstantIndexOp::create(b, loc, size - 1);
  return arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, asIndex, zero), last);
}

/// The first row (i64) of rank `rank`'s block of `rows` rows, or null for
/// an embedding that is not split.
Value firstRow(OpBuilder &b, Location loc, Value rank, int64_t rows) {
  if (!rank)
    return {};
  Value rank64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), rank);
  return arith::MulIOp::create(b, loc, rank64,
                               arith::ConstantIntOp::create(b, loc, rows, 64));
}

/// Whether the i64 `index` is in [0, rows).
Value inRows(OpBuilder &b, Location loc, Value index, int64_t rows) {
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value count = arith::ConstantIntOp::create(b, loc, rows, 64);
  return arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, count));
}

struct EmbeddingToLinalg : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    int64_t rows = op.getWeight().getType().getDimSize(0);
    MLIRContext *context = rewriter.getContext();
    AffineMap indices =
        AffineMap::getMultiDimIdentityMap(rank, context).dropResult(rank - 1);
    AffineMap result = AffineMap::getMultiDimIdentityMap(rank, context);
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    Value weight = op.getWeight();
    Value first = firstRow(rewriter, loc, op.getRank(), rows);
    auto gather = linalg::GenericOp::create(
        rewriter, loc, type, op.getInput(), init,
        ArrayRef<AffineMap>{indices, result}, parallelIterators(rank),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value index = args[0];
          Value inBlock;
          if (first) {
            index = arith::SubIOp::create(b, nloc, index, first);
            inBlock = inRows(b, nloc, index, rows);
          }
          Value row = clampedIndex(b, nloc, index, rows);
          Value column = linalg::IndexOp::create(b, nloc, rank - 1);
          Value element = tensor::ExtractOp::create(b, nloc, weight,
                                                    ValueRange{row, column});
          if (inBlock)
            element = arith::SelectOp::create(
                b, nloc, inBlock, element,
                floatConstant(b, nloc, element.getType(), 0.0));
          linalg::YieldOp::create(b, nloc, element);
        });
    rewriter.replaceOp(op, gather.getResult(0));
    return success();
  }
};

/// `value` with its leading dims (all but `keepTrailing`) merged into one
/// (a missing one added): indices [..] → [N], cotangents [.., C] → [N, C].
Value flattenLeadingDims(OpBuilder &b, Location loc, Value value,
                         int64_t keepTrailing) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t lead = type.getRank() - keepTrailing;
  if (lead == 1)
    return value;
  if (lead == 0) {
    SmallVector<int64_t> shape = {1};
    llvm::append_range(shape, type.getShape());
    SmallVector<ReassociationIndices> groups;
    if (keepTrailing)
      groups.push_back({0, 1});
    for (int64_t d = 2; d <= keepTrailing; ++d)
      groups.push_back({d});
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), value,
        groups);
  }
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t d = 0; d < lead; ++d)
    groups.front().push_back(d);
  for (int64_t d = lead; d < type.getRank(); ++d)
    groups.push_back({d});
  return tensor::CollapseShapeOp::create(b, loc, value, groups);
}

struct EmbeddingGradToLinalg : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rows = type.getDimSize(0), features = type.getDimSize(1);
    Type element = type.getElementType();
    Value indices = flattenLeadingDims(rewriter, loc, op.getInput(), 0);
    Value cotangent = flattenLeadingDims(rewriter, loc, op.getCotangent(), 1);
    int64_t tokens = cast<RankedTensorType>(indices.getType()).getDimSize(0);
    std::optional<int64_t> padding = op.getPaddingIdx();

    Value zeros = filled(rewriter, loc, type.getShape(), element, 0.0);
    Value first = firstRow(rewriter, loc, op.getRank(), rows);
    Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value upper = arith::ConstantIndexOp::create(rewriter, loc, tokens);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto rowType = RankedTensorType::get({features}, element);
    auto loop = scf::ForOp::create(
        rewriter, loc, lower, upper, step, ValueRange{zeros},
        [&](OpBuilder &b, Location nloc, Value token, ValueRange acc) {
          Value global = tensor::ExtractOp::create(b, nloc, indices, token);
          // Indices outside the (rank's) rows and the padding row add
          // nothing.
          Value index =
              first ? arith::SubIOp::create(b, nloc, global, first).getResult()
                    : global;
          Value keep = inRows(b, nloc, index, rows);
          if (padding) {
            Value pad = arith::ConstantIntOp::create(b, nloc, *padding, 64);
            keep = arith::AndIOp::create(
                b, nloc, keep,
                arith::CmpIOp::create(b, nloc, arith::CmpIPredicate::ne, global,
                                      pad));
          }
          Value row = clampedIndex(b, nloc, index, rows);
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                             b.getIndexAttr(features)};
          SmallVector<OpFoldResult> strides = {b.getIndexAttr(1),
                                               b.getIndexAttr(1)};
          SmallVector<OpFoldResult> source = {token, b.getIndexAttr(0)};
          SmallVector<OpFoldResult> target = {row, b.getIndexAttr(0)};
          Value dy = tensor::ExtractSliceOp::create(b, nloc, rowType, cotangent,
                                                    source, sizes, strides);
          Value old = tensor::ExtractSliceOp::create(b, nloc, rowType, acc[0],
                                                     target, sizes, strides);
          AffineMap identity =
              AffineMap::getMultiDimIdentityMap(1, b.getContext());
          Value sum =
              linalg::GenericOp::create(
                  b, nloc, rowType, ValueRange{dy}, ValueRange{old},
                  ArrayRef<AffineMap>{identity, identity}, parallelIterators(1),
                  [&](OpBuilder &ib, Location iloc, ValueRange args) {
                    Value added =
                        arith::AddFOp::create(ib, iloc, args[1], args[0]);
                    Value kept =
                        arith::SelectOp::create(ib, iloc, keep, added, args[1]);
                    linalg::YieldOp::create(ib, iloc, kept);
                  })
                  .getResult(0);
          Value next = tensor::InsertSliceOp::create(b, nloc, sum, acc[0],
                                                     target, sizes, strides);
          scf::YieldOp::create(b, nloc, next);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

struct MaskedFillToLinalg : OpRewritePattern<MaskedFillOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MaskedFillOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    MLIRContext *context = rewriter.getContext();
    // The mask's broadcast dims read its element 0.
    SmallVector<AffineExpr> maskExprs;
    for (auto [dim, size] : llvm::enumerate(op.getMask().getType().getShape()))
      maskExprs.push_back(size == 1 && type.getDimSize(dim) != 1
                              ? getAffineConstantExpr(0, context)
                              : getAffineDimExpr(dim, context));
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
    AffineMap mask = AffineMap::get(rank, 0, maskExprs, context);
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    Value fill = floatConstant(rewriter, loc, type.getElementType(),
                               op.getValue().convertToDouble());
    auto select = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{op.getInput(), op.getMask()}, init,
        ArrayRef<AffineMap>{identity, mask, identity}, parallelIterators(rank),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value chosen =
              arith::SelectOp::create(b, nloc, args[1], fill, args[0]);
          linalg::YieldOp::create(b, nloc, chosen);
        });
    rewriter.replaceOp(op, select.getResult(0));
    return success();
  }
};

/// The per-row pieces both cross-entropy ops need, for logits [N, V].
struct RowStatistics {
  Value max;    // [N]: max over the classes
  Value sumExp; // [N]: Σ exp(x − max)
};

struct ClassificationMaps {
  explicit ClassificationMaps(MLIRContext *context)
      : full(AffineMap::getMultiDimIdentityMap(2, context)),
        row(AffineMap::get(2, 0, getAffineDimExpr(0, context))),
        rowScalar(AffineMap::get(2, 0, {}, context)),
        perRow(AffineMap::getMultiDimIdentityMap(1, context)),
        scalar(AffineMap::get(1, 0, {}, context)) {}
  AffineMap full, row, rowScalar, perRow, scalar;
  SmallVector<utils::IteratorType> rowReduction = {
      utils::IteratorType::parallel, utils::IteratorType::reduction};
  SmallVector<utils::IteratorType> columnReduction = {
      utils::IteratorType::reduction};
};

/// Where a rank's block of the classes sits: no block (whole logits), or
/// the block of `rank` among `shards`.
struct ClassBlock {
  std::optional<int64_t> shards;
  Value rank;

  /// `values` combined over the ranks by `kind`; `values` itself for whole
  /// logits.
  Value allReduce(OpBuilder &b, Location loc, Value values,
                  shard::ReductionKind kind) const {
    return shards ? layout::buildAllReduce(b, loc, values, kind) : values;
  }
  /// The class of column 0 of the block, as i64 (none for whole logits).
  Value firstClass(OpBuilder &b, Location loc, int64_t blockSize) const {
    return firstRow(b, loc, rank, blockSize);
  }
};

RowStatistics rowStatistics(OpBuilder &b, Location loc, Value logits,
                            const ClassificationMaps &maps,
                            const ClassBlock &block) {
  auto type = cast<RankedTensorType>(logits.getType());
  Type element = type.getElementType();
  int64_t rows = type.getDimSize(0);
  auto rowsType = RankedTensorType::get({rows}, element);
  double lowest = -std::numeric_limits<double>::infinity();
  Value max =
      linalg::GenericOp::create(
          b, loc, rowsType, logits, filled(b, loc, {rows}, element, lowest),
          ArrayRef<AffineMap>{maps.full, maps.row}, maps.rowReduction,
          [](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(
                nb, nloc,
                arith::MaximumFOp::create(nb, nloc, args[0], args[1])
                    .getResult());
          })
          .getResult(0);
  max = block.allReduce(b, loc, max, shard::ReductionKind::Max);
  Value sumExp =
      linalg::GenericOp::create(
          b, loc, rowsType, ValueRange{logits, max},
          filled(b, loc, {rows}, element, 0.0),
          ArrayRef<AffineMap>{maps.full, maps.row, maps.row}, maps.rowReduction,
          [](OpBuilder &nb, Location nloc, ValueRange args) {
            Value shifted = arith::SubFOp::create(nb, nloc, args[0], args[1]);
            Value e = math::ExpOp::create(nb, nloc, shifted);
            linalg::YieldOp::create(
                nb, nloc,
                arith::AddFOp::create(nb, nloc, args[2], e).getResult());
          })
          .getResult(0);
  return {max, block.allReduce(b, loc, sumExp, shard::ReductionKind::Sum)};
}

/// Whether target `t` (i64) counts: it is not the ignored index.
Value counts(OpBuilder &b, Location loc, Value target, int64_t ignoreIndex) {
  Value ignored = arith::ConstantIntOp::create(b, loc, ignoreIndex, 64);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, target,
                               ignored);
}

/// Whether column `linalg.index 1` is target `t`: in a block of the classes
/// whose column 0 is class `firstClass`, or of whole logits (no
/// `firstClass`).
Value isTarget(OpBuilder &b, Location loc, Value target, Value firstClass) {
  Value column = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                            linalg::IndexOp::create(b, loc, 1));
  if (firstClass)
    column = arith::AddIOp::create(b, loc, column, firstClass);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, column,
                               target);
}

/// The number of targets that count, as a 0-d float tensor.
Value countedTargets(OpBuilder &b, Location loc, Value targets, Type element,
                     int64_t ignoreIndex, const ClassificationMaps &maps) {
  auto scalarType = RankedTensorType::get({}, element);
  return linalg::GenericOp::create(
             b, loc, scalarType, targets, filled(b, loc, {}, element, 0.0),
             ArrayRef<AffineMap>{maps.perRow, maps.scalar},
             maps.columnReduction,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value one = floatConstant(nb, nloc, element, 1.0);
               Value zero = floatConstant(nb, nloc, element, 0.0);
               Value add = arith::SelectOp::create(
                   nb, nloc, counts(nb, nloc, args[0], ignoreIndex), one, zero);
               linalg::YieldOp::create(
                   nb, nloc,
                   arith::AddFOp::create(nb, nloc, args[1], add).getResult());
             })
      .getResult(0);
}

struct CrossEntropyToLinalg : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ClassificationMaps maps(rewriter.getContext());
    Value logits = op.getLogits(), targets = op.getTargets();
    auto type = cast<RankedTensorType>(logits.getType());
    Type element = type.getElementType();
    int64_t rows = type.getDimSize(0);
    int64_t ignoreIndex = op.getIgnoreIndex();
    ClassBlock block{op.getShards(), op.getRank()};
    RowStatistics stats = rowStatistics(rewriter, loc, logits, maps, block);
    auto rowsType = RankedTensorType::get({rows}, element);
    int64_t columns = type.getDimSize(1);
    Value firstClass = block.firstClass(rewriter, loc, columns);
    // x[n, t_n], read at the target's column (on the rank whose block holds
    // it; 0 on the others, and for a target outside the classes).
    Value picked =
        linalg::GenericOp::create(
            rewriter, loc, rowsType, targets,
            tensor::EmptyOp::create(rewriter, loc, rowsType.getShape(), element)
                .getResult(),
            ArrayRef<AffineMap>{maps.perRow, maps.perRow}, parallelIterators(1),
            [&](OpBuilder &b, Location nloc, ValueRange args) {
              Value column = args[0];
              if (firstClass)
                column = arith::SubIOp::create(b, nloc, column, firstClass);
              Value row = linalg::IndexOp::create(b, nloc, 0);
              Value x = tensor::ExtractOp::create(
                  b, nloc, logits,
                  ValueRange{row, clampedIndex(b, nloc, column, columns)});
              Value zero = floatConstant(b, nloc, element, 0.0);
              linalg::YieldOp::create(
                  b, nloc,
                  arith::SelectOp::create(
                      b, nloc, inRows(b, nloc, column, columns), x, zero)
                      .getResult());
            })
            .getResult(0);
    picked = block.allReduce(rewriter, loc, picked, shard::ReductionKind::Sum);
    // logsumexp − x[n, t_n] for the rows that count, 0 for the others.
    auto rowLoss = [&](OpBuilder &b, Location nloc, ValueRange args) {
      Value logSumExp = arith::AddFOp::create(
          b, nloc, math::LogOp::create(b, nloc, args[1]), args[0]);
      Value term = arith::SubFOp::create(b, nloc, logSumExp, args[2]);
      Value zero = floatConstant(b, nloc, element, 0.0);
      return arith::SelectOp::create(
                 b, nloc, counts(b, nloc, args[3], ignoreIndex), term, zero)
          .getResult();
    };
    SmallVector<Value> rowInputs = {stats.max, stats.sumExp, picked, targets};
    if (op.getNone()) {
      Value losses =
          linalg::GenericOp::create(
              rewriter, loc, rowsType, rowInputs,
              tensor::EmptyOp::create(rewriter, loc, rowsType.getShape(),
                                      element)
                  .getResult(),
              SmallVector<AffineMap>(5, maps.perRow), parallelIterators(1),
              [&](OpBuilder &b, Location nloc, ValueRange args) {
                linalg::YieldOp::create(b, nloc, rowLoss(b, nloc, args));
              })
              .getResult(0);
      rewriter.replaceOp(op, losses);
      return success();
    }
    auto scalarType = RankedTensorType::get({}, element);
    Value total = linalg::GenericOp::create(
                      rewriter, loc, scalarType, rowInputs,
                      filled(rewriter, loc, {}, element, 0.0),
                      ArrayRef<AffineMap>{maps.perRow, maps.perRow, maps.perRow,
                                          maps.perRow, maps.scalar},
                      maps.columnReduction,
                      [&](OpBuilder &b, Location nloc, ValueRange args) {
                        linalg::YieldOp::create(
                            b, nloc,
                            arith::AddFOp::create(b, nloc, args[4],
                                                  rowLoss(b, nloc, args))
                                .getResult());
                      })
                      .getResult(0);
    if (op.getSum()) {
      rewriter.replaceOp(op, total);
      return success();
    }
    Value count =
        countedTargets(rewriter, loc, targets, element, ignoreIndex, maps);
    // Element-wise on 0-d tensors, as the importer writes tensor arith.
    Value mean = arith::DivFOp::create(rewriter, loc, total, count);
    rewriter.replaceOp(op, mean);
    return success();
  }
};

struct CrossEntropyGradToLinalg : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ClassificationMaps maps(rewriter.getContext());
    Value logits = op.getLogits(), targets = op.getTargets();
    RankedTensorType type = op.getType();
    Type element = type.getElementType();
    int64_t ignoreIndex = op.getIgnoreIndex();
    ClassBlock block{op.getShards(), op.getRank()};
    RowStatistics stats = rowStatistics(rewriter, loc, logits, maps, block);
    Value firstClass = block.firstClass(rewriter, loc, type.getDimSize(1));
    // The cotangent of each row's loss: dloss (dloss[n] for `none`), over
    // the count for a mean.
    Value perRow = op.getCotangent();
    SmallVector<Value> inputs = {logits, stats.max, stats.sumExp, targets,
                                 perRow};
    SmallVector<AffineMap> indexing = {maps.full, maps.row, maps.row, maps.row,
                                       op.getNone() ? maps.row
                                                    : maps.rowScalar};
    bool mean = !op.getSum() && !op.getNone();
    if (mean) {
      inputs.push_back(
          countedTargets(rewriter, loc, targets, element, ignoreIndex, maps));
      indexing.push_back(maps.rowScalar);
    }
    indexing.push_back(maps.full);
    Value init =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), element);
    auto gradient = linalg::GenericOp::create(
        rewriter, loc, type, inputs, init, indexing, parallelIterators(2),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value shifted = arith::SubFOp::create(b, nloc, args[0], args[1]);
          Value probability = arith::DivFOp::create(
              b, nloc, math::ExpOp::create(b, nloc, shifted), args[2]);
          Value one = floatConstant(b, nloc, element, 1.0);
          Value zero = floatConstant(b, nloc, element, 0.0);
          Value hot = arith::SelectOp::create(
              b, nloc, isTarget(b, nloc, args[3], firstClass), one, zero);
          Value scale =
              mean
                  ? arith::DivFOp::create(b, nloc, args[4], args[5]).getResult()
                  : args[4];
          Value dx = arith::MulFOp::create(
              b, nloc, scale, arith::SubFOp::create(b, nloc, probability, hot));
          Value kept = arith::SelectOp::create(
              b, nloc, counts(b, nloc, args[3], ignoreIndex), dx, zero);
          linalg::YieldOp::create(b, nloc, kept);
        });
    rewriter.replaceOp(op, gradient.getResult(0));
    return success();
  }
};
} // namespace

void mlir::lamina::populateModelOpsToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<EmbeddingToLinalg, EmbeddingGradToLinalg, MaskedFillToLinalg,
               CrossEntropyToLinalg, CrossEntropyGradToLinalg>(
      patterns.getContext());
}
