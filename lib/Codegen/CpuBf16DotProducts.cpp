//===- CpuBf16DotProducts.cpp - bf16 contractions as vdpbf16ps ------------===//
//
// A bf16 layer matmul packed in pairs of k (convert-lamina-to-linalg's
// bf16-pairs) vectorizes to contractions over (..., n0, ..., k2, p) whose
// operands are widened to f32. Each becomes, per row, block of 16 features
// and pair of k, one AVX512-BF16 dot product (x86vector.avx512.dot): the
// row's pair of x broadcast to every 32-bit lane, times the 16 features'
// pairs of W (16 × 2 contiguous bf16 in the packed weight), added to 16 f32
// accumulators.
//
//===----------------------------------------------------------------------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACPUBF16DOTPRODUCTS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

/// Lanes of a dot product: 16 f32 accumulators, 16 pairs of bf16.
static constexpr int64_t kLanes = 16;

/// Where a paired contraction's dims are: the block's 16 features (the
/// accumulator's innermost dim) and the pair (the last iteration dim, x's
/// innermost, a reduction of 2).
struct PairedDims {
  unsigned features, pair;
};

/// `operand` before its widening, if it is one.
static Value getUnwidened(Value operand) {
  if (auto extend = operand.getDefiningOp<arith::ExtFOp>())
    return extend.getIn();
  return operand;
}

/// The dims of `op` if it is a contraction of bf16 operands (widened or
/// not) into f32 over pairs of k, else nothing.
static std::optional<PairedDims> getPairedDims(vector::ContractionOp op) {
  if (op.getKind() != vector::CombiningKind::ADD)
    return std::nullopt;
  auto accType = dyn_cast<VectorType>(op.getAccType());
  if (!accType || !accType.getElementType().isF32() ||
      accType.getShape().back() != kLanes)
    return std::nullopt;
  auto isBF16 = [](Value operand) {
    return getElementTypeOrSelf(getUnwidened(operand).getType()).isBF16();
  };
  if (!isBF16(op.getLhs()) || !isBF16(op.getRhs()))
    return std::nullopt;
  SmallVector<int64_t> bounds;
  op.getIterationBounds(bounds);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned pair = maps[0].getDimPosition(maps[0].getNumResults() - 1);
  if (pair + 1 != bounds.size() || bounds[pair] != 2 ||
      !vector::isReductionIterator(op.getIteratorTypes()[pair]))
    return std::nullopt;
  return PairedDims{maps[2].getDimPosition(maps[2].getNumResults() - 1),
                    pair};
}

/// One dot product's share of a paired contraction's iteration space: one
/// of every dim but the block's features and the pair.
static std::optional<SmallVector<int64_t>> getDotProductShape(Operation *op) {
  auto contract = cast<vector::ContractionOp>(op);
  std::optional<PairedDims> dims = getPairedDims(contract);
  SmallVector<int64_t> shape(contract.getIteratorTypes().size(), 1);
  shape[dims->features] = kLanes;
  shape[dims->pair] = 2;
  return shape;
}

/// The position of iteration dim `dim` among `map`'s results, if used.
static std::optional<unsigned> getResultOf(AffineMap map, unsigned dim) {
  return map.getResultPosition(getAffineDimExpr(dim, map.getContext()));
}

/// Whether `value` repeats along `dim` because a broadcast made it so (a
/// dim it added, or a unit dim it stretched), seen through slices.
static bool isBroadcastAlong(Value value, unsigned dim) {
  while (auto slice = value.getDefiningOp<vector::ExtractStridedSliceOp>())
    value = slice.getSource();
  auto broadcast = value.getDefiningOp<vector::BroadcastOp>();
  if (!broadcast)
    return false;
  auto sourceType = dyn_cast<VectorType>(broadcast.getSourceType());
  int64_t added = broadcast.getResultVectorType().getRank() -
                  (sourceType ? sourceType.getRank() : 0);
  return int64_t(dim) < added || sourceType.getDimSize(dim - added) == 1;
}

/// `operand` flattened to one dim; with `dropDim`, only its index 0 along
/// that dim.
static Value flattenOperand(OpBuilder &b, Location loc, Value operand,
                            std::optional<unsigned> dropDim) {
  auto type = cast<VectorType>(operand.getType());
  if (dropDim) {
    SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
        strides(type.getRank(), 1);
    sizes[*dropDim] = 1;
    operand = vector::ExtractStridedSliceOp::create(b, loc, operand, offsets,
                                                    sizes, strides);
  }
  auto sliced = cast<VectorType>(operand.getType());
  return vector::ShapeCastOp::create(
      b, loc, VectorType::get({sliced.getNumElements()},
                              sliced.getElementType()),
      operand);
}

/// `value` (a slice of an in-bounds read of a memref, or the read itself)
/// as one vector.load of its elements, where they lie contiguously in the
/// memref: a register tile's slice of W is one 64-byte load, where the
/// read's lowering to rank-1 transfers would load its 16 pairs one by one.
/// Null where they do not.
static Value loadContiguously(OpBuilder &b, Location loc, Value value) {
  auto sliceType = cast<VectorType>(value.getType());
  SmallVector<int64_t> offsets(sliceType.getRank(), 0);
  Value source = value;
  if (auto slice = value.getDefiningOp<vector::ExtractStridedSliceOp>()) {
    source = slice.getSource();
    llvm::copy(getI64SubArray(slice.getOffsets()), offsets.begin());
  }
  auto read = source.getDefiningOp<vector::TransferReadOp>();
  if (!read || read.getMask() || !read.getPermutationMap().isMinorIdentity() ||
      read.getVectorType().getRank() != sliceType.getRank() ||
      llvm::is_contained(read.getInBoundsValues(), false))
    return {};
  auto memrefType = dyn_cast<MemRefType>(read.getBase().getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!memrefType || failed(memrefType.getStridesAndOffset(strides, offset)))
    return {};
  // The slice's dims are the memref's last; from its first non-unit dim
  // on, whole dims but that one, laid out row-major.
  ArrayRef<int64_t> shape = sliceType.getShape();
  int64_t lead = memrefType.getRank() - sliceType.getRank();
  int64_t first = 0;
  while (first + 1 < int64_t(shape.size()) && shape[first] == 1)
    ++first;
  int64_t contiguous = 1;
  for (int64_t dim = shape.size() - 1; dim >= first; --dim) {
    if (strides[lead + dim] != contiguous ||
        (dim > first && memrefType.getDimSize(lead + dim) != shape[dim]))
      return {};
    contiguous *= shape[dim];
  }
  SmallVector<Value> indices(read.getIndices());
  for (auto [dim, sliceOffset] : llvm::enumerate(offsets))
    if (sliceOffset)
      indices[lead + dim] = arith::AddIOp::create(
          b, loc, indices[lead + dim],
          arith::ConstantIndexOp::create(b, loc, sliceOffset));
  return vector::LoadOp::create(
      b, loc,
      VectorType::get({sliceType.getNumElements()},
                      sliceType.getElementType()),
      read.getBase(), indices);
}

namespace {
/// A paired contraction of one dot product's shape (one row, 16 features,
/// one pair of k) → x86vector.avx512.dot.
struct PairedContractionToDot : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<PairedDims> dims = getPairedDims(op);
    if (!dims)
      return failure();
    SmallVector<int64_t> bounds;
    op.getIterationBounds(bounds);
    if (bounds != *getDotProductShape(op))
      return rewriter.notifyMatchFailure(op, "not one dot product's shape");
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // W's 16 features × 2 must lie feature-major (the packed weight's
    // order); x may repeat along the features (a broadcast not folded).
    std::optional<unsigned> rhsFeatures = getResultOf(maps[1], dims->features);
    std::optional<unsigned> rhsPair = getResultOf(maps[1], dims->pair);
    if (!rhsFeatures || !rhsPair || *rhsFeatures > *rhsPair)
      return rewriter.notifyMatchFailure(op, "W's pairs not feature-major");

    Value x = getUnwidened(op.getLhs()), w = getUnwidened(op.getRhs());
    std::optional<unsigned> xFeatures = getResultOf(maps[0], dims->features);
    if (xFeatures && !isBroadcastAlong(x, *xFeatures))
      return rewriter.notifyMatchFailure(op, "x varies along the features");

    Location loc = op.getLoc();
    Value lhs = xFeatures ? Value() : loadContiguously(rewriter, loc, x);
    if (!lhs)
      lhs = flattenOperand(rewriter, loc, x, xFeatures);
    Value rhs = loadContiguously(rewriter, loc, w);
    if (!rhs)
      rhs = flattenOperand(rewriter, loc, w, std::nullopt);
    Value acc = flattenOperand(rewriter, loc, op.getAcc(), std::nullopt);
    // x's pair as one 32-bit lane, in every lane.
    Type i32 = rewriter.getI32Type();
    Value pair = vector::BitCastOp::create(
        rewriter, loc, VectorType::get({1}, i32), lhs);
    Value lanes = vector::BroadcastOp::create(
        rewriter, loc, VectorType::get({kLanes}, i32),
        vector::ExtractOp::create(rewriter, loc, pair, ArrayRef<int64_t>{0}));
    Value pairs = vector::BitCastOp::create(
        rewriter, loc, VectorType::get({2 * kLanes}, rewriter.getBF16Type()),
        lanes);
    Value dot = x86vector::DotBF16Op::create(rewriter, loc, acc.getType(),
                                             acc, pairs, rhs);
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, op.getResultType(),
                                                     dot);
    return success();
  }
};

/// A contraction of bf16 operands into f32 that did not become dot
/// products, on widened operands again: the form lamina-cpu-lower-vectors
/// lowers to FMAs.
struct WidenBf16Contraction : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    auto isBF16 = [](Value operand) {
      return getElementTypeOrSelf(operand.getType()).isBF16();
    };
    auto accType = dyn_cast<VectorType>(op.getAccType());
    if (!accType || !accType.getElementType().isF32() ||
        (!isBF16(op.getLhs()) && !isBF16(op.getRhs())))
      return failure();
    auto widen = [&](Value operand) -> Value {
      if (!isBF16(operand))
        return operand;
      auto type = cast<VectorType>(operand.getType());
      return arith::ExtFOp::create(rewriter, op.getLoc(),
                                   type.clone(rewriter.getF32Type()), operand);
    };
    Value lhs = widen(op.getLhs()), rhs = widen(op.getRhs());
    rewriter.modifyOpInPlace(op, [&] {
      op.getLhsMutable().assign(lhs);
      op.getRhsMutable().assign(rhs);
    });
    return success();
  }
};

struct LaminaCpuBf16DotProductsPass
    : mlir::lamina::impl::LaminaCpuBf16DotProductsBase<
          LaminaCpuBf16DotProductsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    Operation *root = getOperation();
    auto contractions = [&](bool paired) {
      SmallVector<Operation *> ops;
      root->walk([&](vector::ContractionOp op) {
        if (!paired || getPairedDims(op))
          ops.push_back(op);
      });
      return ops;
    };
    // The widening of the operands becomes the contraction's own, so that
    // unrolling slices the bf16 vectors; the transposes and broadcasts it
    // hid (x's rows to every feature, W's blocks to every row) become the
    // contraction's indexing maps, so that the slices read what one dot
    // product reads.
    RewritePatternSet narrow(context);
    vector::populateFoldArithExtensionPatterns(narrow);
    vector::populateVectorReductionToContractPatterns(narrow);
    // One dot product per row, block and pair.
    RewritePatternSet unroll(context);
    vector::populateVectorUnrollPatterns(
        unroll, vector::UnrollVectorOptions()
                    .setFilterConstraint([](Operation *op) {
                      auto contract = dyn_cast<vector::ContractionOp>(op);
                      return success(contract && getPairedDims(contract));
                    })
                    .setNativeShapeFn(getDotProductShape));
    RewritePatternSet dots(context);
    dots.add<PairedContractionToDot>(context);
    // What is left (none the schedules make) computes the same on FMAs.
    RewritePatternSet widen(context);
    widen.add<WidenBf16Contraction>(context);
    if (failed(applyOpPatternsGreedily(contractions(true), std::move(narrow))) ||
        failed(applyOpPatternsGreedily(contractions(true), std::move(unroll))) ||
        failed(applyOpPatternsGreedily(contractions(true), std::move(dots))) ||
        failed(applyOpPatternsGreedily(contractions(false), std::move(widen))))
      return signalPassFailure();
  }
};
} // namespace
