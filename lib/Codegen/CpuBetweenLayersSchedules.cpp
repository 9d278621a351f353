//===- CpuBetweenLayersSchedules.cpp - Schedules of the ops between layers ===//
//
// Attention's batch matmuls, element-wise ops, transposes, row reductions
// and column sums: tiles of 16 lanes (or 8 × 8 for transposes) vectorized,
// reductions held in registers.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::lamina;

namespace mlir::lamina::cpu {

/// Whether each operand is accessed at a projected permutation of the
/// loops: upstream's vectorizer takes nothing else, so an op reading
/// windows (a convolution gradient's `oh·s + kh`) or a turned kernel
/// (`KH − 1 − kh`) stays a loop nest.
static bool hasPermutationMaps(linalg::LinalgOp op) {
  return llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
    return map.isProjectedPermutation(/*allowZeroInResults=*/true);
  });
}

/// The matmuls between layers (attention's scores and values: a
/// `linalg.batch_matmul` per head, or a plain `linalg.matmul`), B read
/// along N: register tiles of 4 rows × 16 columns (per batch), K in steps
/// of 4 with the C tile held in registers across them. Static shapes whose
/// M, N and K the tiles divide; others stay loop nests. Producers are not
/// fused into the tiles: a transposed operand (kᵀ, the backward's) would
/// be pulled in and vectorized with the contraction.
std::optional<SmallVector<int64_t>> planBetweenLayersMatmul(linalg::LinalgOp op,
                                                            bool wide) {
  if (!op.hasPureTensorSemantics() ||
      hasLoweredStage(op, LoweredStage::matmul) ||
      !isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    return std::nullopt;
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
      matmul && matmul.hasUserDefinedMaps())
    return std::nullopt;
  if (auto matmul = dyn_cast<linalg::BatchMatmulOp>(op.getOperation());
      matmul && matmul.hasUserDefinedMaps())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  bool batched = ranges.size() == 4;
  int64_t m = ranges[batched], n = ranges[batched + 1], k = ranges[batched + 2];
  if (m % 4 != 0 || n % 16 != 0 || k % 4 != 0 || k <= 4)
    return std::nullopt;
  // 512-bit vectors: 8 × 32 tiles (16 accumulators) where they divide.
  int64_t rows = wide && m % 8 == 0 ? 8 : 4;
  int64_t columns = wide && n % 32 == 0 ? 32 : 16;
  SmallVector<int64_t> sizes;
  if (batched)
    sizes.push_back(1);
  llvm::append_range(sizes, ArrayRef<int64_t>{rows, columns, 4});
  return sizes;
}

OpSchedule buildBetweenLayersMatmulSchedule(unsigned index,
                                            ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> outer(sizes.drop_back()), inner(sizes.size(), 0);
  outer.push_back(0);
  inner.back() = sizes.back();
  std::string types = handleTypes(sizes.size());
  std::string script = matchTarget(index);
  script += llvm::formatv(
      "  %r{0}, %r{0}_loops:{1} = transform.structured.tile_using_for "
      "%t{0} tile_sizes {2} : (!transform.any_op) -> {3}\n"
      "  %k{0}, %kloop{0} = transform.structured.tile_using_for %r{0} "
      "tile_sizes {4} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n",
      index, sizes.size() - 1, tileSizes(outer), types, tileSizes(inner));
  script += vectorizeNest(index, "%r" + std::to_string(index) + "_loops#0");
  return {script, hoistAccumulator(index), /*contracts=*/true};
}

/// Element-wise ops (residual adds, a lone bias add or activation, an
/// epilogue of an unpacked matmul): rows of 16 lanes, vectorized. Ops on
/// i64 or i32 integers (LNS codes, whose additions are long chains) take
/// rows of 32 lanes where they fit: measured 20% faster than 16 on AVX2
/// for the K-outer LNS linear layers (table mode, and ideal mode beyond
/// the piecewise kernel's f ≤ 25), more independent chains per tile.
/// A last dim of 2, 4 or 8 (dropout's four words of a group, interleaved)
/// joins enough of the dim before it for 64 bytes of its result per tile
/// (16 lanes at least), where that dim allows. A last dim that is not a
/// multiple of the row's tile ends in a partial tile, vectorized with masks
/// (a vocabulary of 65, a hidden size of 76).
std::optional<Tiles> planElementwise(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() != 0 ||
      hasLoweredStage(op, LoweredStage::matmul) || !hasPermutationMaps(op))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic) ||
      llvm::is_contained(ranges, 0) || hasBooleanOperand(op))
    return std::nullopt;
  Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  int64_t last = ranges.back();
  if (ranges.size() >= 2 && (last == 2 || last == 4 || last == 8) &&
      element.isIntOrFloat()) {
    int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
    int64_t lanes = std::max<int64_t>(16, 64 / bytes);
    SmallVector<int64_t> sizes(ranges.size(), 1);
    sizes.back() = last;
    sizes[sizes.size() - 2] = lanes / last;
    if (ranges[ranges.size() - 2] % (lanes / last) == 0)
      return tilesOf(ranges, sizes);
  }
  bool codes = element.isSignlessInteger(64) || element.isSignlessInteger(32);
  SmallVector<int64_t> sizes(ranges.size(), 1);
  sizes.back() = codes && ranges.back() % 32 == 0 ? 32 : 16;
  return tilesOf(ranges, sizes);
}

/// Reductions along the last dim (a loss's or a softmax's row maxima and
/// sums, a norm's statistics) whose combiner reorders safely: float
/// additions and maxima. Each row is tiled off, its reduction split into
/// 16 partial lanes accumulated in registers across the row and combined
/// once at its end, so the row's element-wise work (exp, subtractions) is
/// vectorized. LNS sums keep their order: their combiners are not floats.
/// Bodies reading `linalg.index` stay loops: upstream's partial-reduction
/// tiling (MLIR 22) leaves the index of the split dim relative to its tile.
/// A row that is not a multiple of 16 ends in a partial lane tile,
/// vectorized with masks (its masked-off lanes keep their partial sums).
std::optional<Tiles> planRowReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 ||
      hasLoweredStage(op, LoweredStage::matmul) || !hasPermutationMaps(op) ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      llvm::is_contained(ranges, 0) || ranges.back() <= 16)
    return std::nullopt;
  if (hasBooleanOperand(op))
    return std::nullopt;
  SmallVector<Operation *> combiners;
  if (!isa<FloatType>(getElementTypeOrSelf(op.getDpsInits()[0].getType())) ||
      !matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1 ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp>(combiners[0]))
    return std::nullopt;
  // The lanes of each row: rows of 1, the last dim in tiles of 16.
  SmallVector<int64_t> lanes(ranges.size(), 1);
  lanes.back() = 16;
  return tilesOf(ranges, lanes);
}

OpSchedule buildRowReductionSchedule(unsigned index, const Tiles &tiles) {
  SmallVector<int64_t> rows(tiles.sizes);
  rows.back() = 0;
  std::string script = matchTarget(index);
  std::string row = "%t" + std::to_string(index);
  if (rows.size() > 1) {
    std::string types = handleTypes(rows.size());
    script += llvm::formatv(
        "  %row{0}, %row{0}_loops:{1} = transform.structured.tile_using_for "
        "%t{0} tile_sizes {2} : (!transform.any_op) -> {3}\n",
        index, rows.size() - 1, tileSizes(rows), types);
    row = "%row" + std::to_string(index);
  }
  SmallVector<int64_t> lanes(rows.size(), 0);
  lanes.back() = tiles.sizes.back();
  script += llvm::formatv(
      "  %fill{0}, %part{0}, %combine{0}, %lanes{0} = "
      "transform.structured.tile_reduction_using_for {1} by tile_sizes = {2} "
      ": (!transform.any_op) -> (!transform.any_op, !transform.any_op, "
      "!transform.any_op, !transform.any_op)\n"
      "{3}"
      "  transform.structured.vectorize %combine{0} : !transform.any_op\n"
      "  transform.structured.vectorize %fill{0} : !transform.any_op\n",
      index, row, tileSizes(lanes),
      vectorizeOp("%part" + std::to_string(index), tiles.vectorSizes));
  std::string hoist =
      llvm::formatv("  transform.loop.hoist_loop_invariant_subsets %lanes{0} "
                    ": !transform.any_op\n",
                    index);
  return {script, hoist};
}

/// Whether `op` reads a tensor at computed indices (an embedding's
/// gather): its vectorization must be told to handle n-D tensor.extract
/// (a contiguous load along the row, a gather otherwise).
bool hasExtract(Operation *op) {
  return op->walk([](tensor::ExtractOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Float sums over every dim but the last: a bias's gradient (the column
/// sums of dY [..., N], a `linalg.reduce`) or a norm's weight and bias
/// gradients (a generic with one sum per parameter, the row statistics
/// broadcast along N): chunks of up to 64 columns, each chunk's sums held
/// in registers while the rows stream past, one vector add per row and sum
/// (the rows' order of addition is kept); an N that is not a multiple of 16
/// in chunks of 16, the last partial and masked. Returns the tiles (0 for a
/// summed dim of one, which gets no loop: a loop of one iteration would
/// fold away under the handle that holds it); the schedule puts the column
/// chunks outermost.
std::optional<Tiles> planColumnSum(linalg::LinalgOp op) {
  if (!isa<linalg::ReduceOp, linalg::GenericOp>(op) ||
      !op.hasPureTensorSemantics() ||
      hasLoweredStage(op, LoweredStage::matmul) || !hasPermutationMaps(op) ||
      !op.getBlock()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rank = ranges.size();
  if (rank < 2 || llvm::any_of(ranges, ShapedType::isDynamic) ||
      llvm::is_contained(ranges, 0) || ranges.back() == 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (int64_t d = 0; d < rank; ++d)
    if ((iterators[d] == utils::IteratorType::parallel) != (d == rank - 1))
      return std::nullopt;
  if (hasBooleanOperand(op))
    return std::nullopt;
  // Every result: floats indexed by the last dim alone, summed with addf.
  MLIRContext *context = op->getContext();
  AffineMap lastDim =
      AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context));
  for (OpOperand &init : op.getDpsInitsMutable()) {
    SmallVector<Operation *> combiners;
    if (!isa<FloatType>(getElementTypeOrSelf(init.get().getType())) ||
        op.getMatchingIndexingMap(&init) != lastDim ||
        !matchReduction(op.getRegionOutputArgs(),
                        init.getOperandNumber() - op.getNumDpsInputs(),
                        combiners) ||
        combiners.size() != 1 || !isa<arith::AddFOp>(combiners[0]))
      return std::nullopt;
  }
  SmallVector<int64_t> sizes;
  for (int64_t range : ArrayRef(ranges).drop_back())
    sizes.push_back(range == 1 ? 0 : 1);
  sizes.push_back(0);
  int64_t columns = ranges.back();
  sizes.back() = columns % 64 == 0 ? 64 : columns % 32 == 0 ? 32 : 16;
  return tilesOf(ranges, sizes);
}

OpSchedule buildColumnSumSchedule(unsigned index, const Tiles &tiles) {
  ArrayRef<int64_t> sizes = tiles.sizes;
  int64_t rank = sizes.size();
  int64_t loops = llvm::count_if(sizes, [](int64_t size) { return size; });
  std::string types = handleTypes(loops + 1);
  // Column chunks outermost, then the summed dims.
  SmallVector<int64_t> interchange = {rank - 1};
  llvm::append_range(interchange, llvm::seq<int64_t>(0, rank - 1));
  std::string script = matchTarget(index);
  script += llvm::formatv(
      "  %s{0}, %s{0}_loops:{1} = transform.structured.tile_using_for %t{0} "
      "tile_sizes {2} interchange = {3} : (!transform.any_op) -> {4}\n"
      "{5}",
      index, loops, tileSizes(sizes), tileSizes(interchange), types,
      vectorizeOp("%s" + std::to_string(index), tiles.vectorSizes));
  // The chunk's sums stay in registers across the summed dims' loops,
  // innermost first.
  std::string hoists;
  for (int64_t loop = loops - 1; loop >= 1; --loop)
    hoists += llvm::formatv("  transform.loop.hoist_loop_invariant_subsets "
                            "%s{0}_loops#{1} : !transform.any_op\n",
                            index, loop);
  return {script, hoists};
}

OpSchedule buildElementwiseSchedule(unsigned index, const Tiles &tiles,
                                    bool extracts) {
  ArrayRef<int64_t> sizes = tiles.sizes;
  std::string types = handleTypes(sizes.size() + 1);
  return {matchTarget(index) +
          llvm::formatv(
              "  %v{0}, %v{0}_loops:{1} = transform.structured.tile_using_for "
             "%t{0} tile_sizes {2} : (!transform.any_op) -> {3}\n",
              index, sizes.size(), tileSizes(sizes), types)
              .str() +
          vectorizeOp("%v" + std::to_string(index), tiles.vectorSizes,
                      extracts)};
}

/// Transposes (the backward's Wᵀ, dyᵀ, xᵀ, weight packing) in 8×8 tiles,
/// which lamina-cpu-lower-vectors lowers to AVX2 shuffles and blends
/// (measured: a 16 MiB transpose 21 → 15 ms against 16×16 tiles moved
/// element by element), scheduled before any matmul: a matmul's fusion
/// would otherwise pull a whole transposed panel (16 × K) into its tile and
/// vectorize it as one huge vector transpose. Innermost two dims, static;
/// where they are not multiples of 8, the last tiles are partial and masked
/// (the backward's dYᵀ of a vocabulary of 65).
std::optional<Tiles> planTranspose(linalg::TransposeOp op) {
  auto type = cast<ShapedType>(op.getInit().getType());
  if (!op.hasPureTensorSemantics() || !type.hasStaticShape() ||
      type.getRank() < 2)
    return std::nullopt;
  ArrayRef<int64_t> shape = type.getShape();
  if (llvm::is_contained(shape, 0))
    return std::nullopt;
  SmallVector<int64_t> sizes(shape.size(), 1);
  // A permutation that keeps the last dim (attention's heads moved between
  // [batch, heads, tokens, d] and [batch, tokens, heads, d]) copies whole
  // rows: 16 contiguous elements read and written per step.
  if (op.getPermutation().back() == type.getRank() - 1) {
    sizes.back() = 16;
    return tilesOf(shape, sizes);
  }
  // 8 × 8 tiles (a partial one masked; a dim shorter than 8 whole), which
  // lamina-cpu-lower-vectors turns into shuffles.
  sizes[sizes.size() - 1] = 8;
  sizes[sizes.size() - 2] = 8;
  return tilesOf(shape, sizes);
}

/// A transpose that moves whole rows of 16 (`[a, b, 16] → [b, a, 16]`: the
/// packing of a weight read transposed, Wᵀ, xᵀ or an activation in the
/// backward) as copies of 8 rows × 16 in the source's order: each source
/// row streams once and each tile writes 8 × 64 contiguous bytes (the
/// output's order read a 64-byte piece of every source row in turn).
bool isRowTranspose(linalg::TransposeOp op) {
  auto type = cast<ShapedType>(op.getInit().getType());
  return op.hasPureTensorSemantics() && type.hasStaticShape() &&
         op.getPermutation() == ArrayRef<int64_t>{1, 0, 2} &&
         (type.getDimSize(2) == 16 || type.getDimSize(2) == 8) &&
         type.getDimSize(1) % 8 == 0 && type.getDimSize(0) > 1 &&
         type.getDimSize(1) > 8;
}

OpSchedule buildRowTransposeSchedule(unsigned index) {
  return {matchTarget(index) +
         llvm::formatv(
             "  %v{0}, %v{0}_loops:2 = transform.structured.tile_using_for "
             "%t{0} tile_sizes [1, 8, 0] interchange = [1, 0, 2] : "
             "(!transform.any_op) -> (!transform.any_op, !transform.any_op, "
             "!transform.any_op)\n"
             "  transform.structured.vectorize %v{0} : !transform.any_op\n",
             index)
             .str()};
}

} // namespace mlir::lamina::cpu
