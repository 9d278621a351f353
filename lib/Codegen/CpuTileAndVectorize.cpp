//===- CpuTileAndVectorize.cpp - Tiling and vectorization of matmuls ------===//
//
// The schedules are transform-dialect scripts, instantiated per matmul with
// tile sizes chosen from its static shape and applied with the transform
// interpreter.
//
//===----------------------------------------------------------------------===//

#include "lamina/Codegen/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Support/TransformScript.h"
#include "lamina/Support/VectorBits.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACPUTILEANDVECTORIZE
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// Marks the op a generated schedule applies to, for its `match`, and the
/// producers a threaded schedule fuses into its parallel loop.
static constexpr StringLiteral kTargetAttr = "__lamina_tile_target";
static constexpr StringLiteral kMatmulAttr = "__lamina_tile_matmul";
static constexpr StringLiteral kFillAttr = "__lamina_tile_fill";
/// The most bytes of x rows a cache tile keeps for several blocks of W: a
/// quarter of a 2 MiB L2.
static constexpr int64_t kSharedRowsBytes = 512 * 1024;
/// The most bytes of x rows that the cache tiles stream past each group of
/// W's blocks in turn: an eighth of a 32 MiB L3 (AMD's per-CCD L3). More
/// rows are split into slabs of at most this size, one after the other.
static constexpr int64_t kStreamedRowsBytes = 4 * 1024 * 1024;
/// The most bytes of x rows and of a group of blocks' panel that the
/// register tiles of an uncached matmul share: a quarter of Zen 5's L2.
static constexpr int64_t kChunkBytes = 256 * 1024;
/// How far ahead a loop streaming its weight prefetches it: 4 KiB (at
/// 16 × 4096 × 4096 on an AVX-512 Xeon, 2-8 KiB were alike).
static constexpr int64_t kPrefetchDistanceBytes = 4096;

static bool hasStage(Operation *op, StringRef stage) {
  auto attr = op ? op->getAttrOfType<StringAttr>(LaminaDialect::kStageAttrName)
                 : StringAttr();
  return attr && attr.getValue() == stage;
}

/// The packed matmul: a generic over (m, n1, n0, k), or over
/// (m1, m0, n1, n0, k) when its input is packed in panels of m0 rows.
static linalg::GenericOp getPackedMatmul(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !hasStage(generic, "matmul") ||
      (generic.getNumLoops() != 4 && generic.getNumLoops() != 5))
    return {};
  return generic;
}

/// The size of a matmul's x elements (4 for a type without a bit width).
static int64_t getInputBytes(linalg::GenericOp matmul) {
  Type element = getElementTypeOrSelf(matmul.getDpsInputs()[0].getType());
  return element.isIntOrFloat() ? element.getIntOrFloatBitWidth() / 8 : 4;
}

/// Marks every function of `module` with the LLVM attribute
/// min-legal-vector-width=512 (through func-to-llvm's passthrough): without
/// it the x86 back end splits 512-bit vectors on CPUs that prefer 256-bit
/// ones, which halves a register tile's accumulators.
static void allowWideVectors(ModuleOp module) {
  MLIRContext *context = module.getContext();
  auto entry = ArrayAttr::get(
      context, {StringAttr::get(context, "min-legal-vector-width"),
                StringAttr::get(context, "512")});
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    SmallVector<Attribute> passthrough;
    if (auto existing = func->getAttrOfType<ArrayAttr>("passthrough"))
      llvm::append_range(passthrough, existing.getValue());
    passthrough.push_back(entry);
    func->setAttr("passthrough", ArrayAttr::get(context, passthrough));
  }
}

namespace {
/// Tile sizes of one schedule.
struct TilePlan {
  // 0: no cache-level tile; its loops run blocks outside rows.
  int64_t cacheRows = 0, cacheBlocks = 0;
  // 0: the cache tiles' loops cover every row; else they run over slabs
  // of this many rows, one after the other.
  int64_t slabRows = 0;
  int64_t registerRows = 1;
  bool tileRegisterBlocks = true;
  int64_t kStep = 0; // 0: K not tiled
  // 0: each register tile runs all of K; else the register tiles of a
  // group of blocks run, in turn, over chunks of this many k of its panel.
  int64_t kChunk = 0;
  int64_t registerBlocks = 1; // blocks of 16 features per register tile
};
} // namespace

/// Chooses tile sizes for a matmul of M rows, N1 blocks of 16 and depth K,
/// x's elements `inputBytes` wide; `wide`: 512-bit vectors (a block of 16
/// features is one register); `threaded`: the cache tiles are shared out
/// among threads. Every tile divides its extent and is smaller than it: a
/// one-trip loop would be folded away under the schedule's handles.
static std::optional<TilePlan> planTiles(int64_t m, int64_t n1, int64_t k,
                                         int64_t inputBytes, bool wide,
                                         bool threaded) {
  // A depth-1 matmul (in_features = 1) is an outer product: vectorized, its
  // unit reduction dim sends the vector lowering's unit-dim patterns into a
  // cycle that never ends. It stays a loop nest.
  if (k == 1)
    return std::nullopt;
  // An empty dim (no rows, no features, in_features = 0: a sum of nothing)
  // has no tile; upstream's tiling divides by it. Loops of no iterations.
  if (m == 0 || n1 == 0 || k == 0)
    return std::nullopt;
  TilePlan plan;
  // Cache level: the register tile's blocks of W stay in L1/L2 while every
  // row of x streams past them. On an AVX-512 Xeon (2 MiB L2) tiles of 128
  // rows × 2 blocks, blocks outer, beat tiles of 256 rows × 16 blocks, rows
  // outer (the CPU notes' choice on Zen 3), at M = 2048: 1.02-1.14× on the
  // layer, 1.09× on the backward's dX. When the tile's 128 rows of x fit in
  // a quarter of L2, 8 blocks share them, so that x streams from L3 a
  // quarter as often: 2048 × 1024 × 4096 1.05-1.10× faster, the backward's
  // dW over 512 tokens 1.16×; with 1 MiB of rows (K = 2048) 1.2× slower,
  // and on two threads (cache tiles shared out) 1.07× slower.
  if (m >= 256 && m % 128 == 0 && n1 > 2 && n1 % 2 == 0) {
    plan.cacheRows = 128;
    plan.cacheBlocks = 2;
    if (!threaded && plan.cacheRows * k * inputBytes <= kSharedRowsBytes &&
        n1 % 8 == 0 && n1 > 8)
      plan.cacheBlocks = 8;
  }
  // Each slab reads all of W again, but from L3, where x no longer fitted:
  // on Zen 5, slabs of 8 MiB made 2048 × 4096 × 1024 112-118 → 94-95 ms,
  // 2048 × 4096 × 4096 1.2× faster, the backward's dX and dW over 2048
  // tokens 1.15-1.4×, and on two threads (each slab's cache tiles shared
  // out) 2048 × 4096 × 1024 54.1 → 46.3 ms; slabs of 4 MiB the backward's
  // dW 4096 × 1024 over 512 tokens (8 MiB of dY) 25.2 → 23.1 ms, over 2048
  // tokens 108.8 → 101.7, the rest alike or 1-3% faster.
  if (plan.cacheRows && m * k * inputBytes > kStreamedRowsBytes)
    for (int64_t slab = m / 2; slab >= plan.cacheRows; slab /= 2)
      if (m % slab == 0 && slab % plan.cacheRows == 0 &&
          slab * k * inputBytes <= kStreamedRowsBytes) {
        plan.slabRows = slab;
        break;
      }
  int64_t rows = plan.cacheRows ? plan.cacheRows : m;
  int64_t blocks = plan.cacheBlocks ? plan.cacheBlocks : n1;
  // Register tiles: 4 rows × 1 block on AVX2 (8 accumulators of 8 lanes);
  // 8 rows × 2 blocks with 512-bit vectors (16 of AVX-512's 32 registers:
  // 1.6x faster than 4 × 1 at 512 × 1024 × 4096 on an AVX-512 Xeon).
  for (int64_t candidate : {8, 4, 2, 1})
    if (candidate <= (wide ? 8 : 4) && rows % candidate == 0) {
      plan.registerRows = candidate;
      break;
    }
  if (plan.registerRows == rows)
    plan.registerRows = 0; // the row extent already is a register tile
  if (wide && blocks % 2 == 0 && (blocks > 2 || plan.registerRows))
    plan.registerBlocks = 2;
  plan.tileRegisterBlocks = blocks > plan.registerBlocks;
  if (plan.registerRows == 0 && !plan.tileRegisterBlocks)
    return std::nullopt; // a single register tile: nothing to schedule
  for (int64_t candidate : {4, 2})
    if (k % candidate == 0 && k > candidate) {
      plan.kStep = candidate;
      break;
    }
  // Without a K tile the whole reduction is unrolled into the tile.
  if (plan.kStep == 0 && k > 64)
    return std::nullopt;
  // Without cache tiles, several register tiles of rows read each group of
  // blocks' panel, the first from memory. When all rows of x and the panel
  // exceed a quarter of L2, they share it in chunks of k that fit there.
  // At 64 × 4096 × 4096 on Zen 5 (1 MiB L2): 12.7 → 11.6 ms; at 16 × 4096
  // × 4096, where the panel streams from memory, 3.7 → 3.2-3.3 ms.
  if (!plan.cacheRows && plan.registerRows && plan.tileRegisterBlocks &&
      plan.kStep) {
    int64_t bytesPerK = (m + plan.registerBlocks * 16) * inputBytes;
    for (int64_t chunk = k / 2; chunk > plan.kStep; chunk /= 2)
      if (k % chunk == 0 && chunk % plan.kStep == 0 &&
          chunk * bytesPerK <= kChunkBytes) {
        plan.kChunk = chunk;
        break;
      }
  }
  return plan;
}

namespace {
/// Where a schedule's tiles of rows and blocks of 16 features go among its
/// target's loops: (m, n1, n0[, k]), or (m1, m0, n1, n0, k) with rows in
/// panels of m0.
struct LoopLayout {
  unsigned numLoops = 4;
  int64_t rowPanel = 0; // 0: the rows are one loop

  SmallVector<int64_t> tile(int64_t rows, int64_t blocks) const {
    SmallVector<int64_t> sizes(numLoops, 0);
    unsigned blockLoop = rowPanel ? 2 : 1;
    sizes[0] = rowPanel ? rows / rowPanel : rows;
    sizes[blockLoop] = blocks;
    return sizes;
  }
  /// The loop order putting blocks outside rows.
  SmallVector<int64_t> blocksOuter() const {
    if (rowPanel)
      return {2, 0, 1};
    return {1, 0};
  }
  /// The matmul's k, its last loop, in steps of `k`.
  SmallVector<int64_t> kTile(int64_t k) const {
    SmallVector<int64_t> sizes(rowPanel ? 5 : 4, 0);
    sizes.back() = k;
    return sizes;
  }
};
} // namespace

static std::string tileSizes(ArrayRef<int64_t> sizes) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(sizes))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

/// The result types of a transform op returning `count` handles:
/// "(!transform.any_op, ...)".
static std::string handleTypes(size_t count) {
  std::string types = "(";
  for (size_t i = 0; i < count; ++i)
    types += i ? ", !transform.any_op" : "!transform.any_op";
  return types + ")";
}

/// Whether `op` reads or writes booleans, which stay scalar: LLVM stores a
/// vector<Nxi1> as packed bits, a memref of i1 holds one byte per element.
static bool hasBooleanOperand(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), [](Type type) {
    return getElementTypeOrSelf(type).isInteger(1);
  });
}

/// One schedule step: fuse `target` with its producers into a loop nest
/// over the dims with a non-zero tile size, in the order of `interchange`
/// (a permutation of the target's dims; empty: in their order).
static std::string fuseStep(StringRef result, StringRef target,
                            ArrayRef<int64_t> sizes,
                            ArrayRef<int64_t> interchange) {
  int64_t loops = llvm::count_if(sizes, [](int64_t s) { return s != 0; });
  std::string types = handleTypes(loops + 1);
  std::string loopResults = loops ? llvm::formatv(", %{0}_loops:{1}", result,
                                                  loops)
                                        .str()
                                  : "";
  return llvm::formatv(
             "  %{0}{1} = transform.structured.fuse %{2} tile_sizes {3}{4}\n"
             "      : (!transform.any_op) -> {5}\n",
             result, loopResults, target, tileSizes(sizes),
             interchange.empty() ? "" : " interchange " + tileSizes(interchange),
             types)
      .str();
}

/// The op schedule `index` applies to, as the handle `%t<index>`.
static std::string matchTarget(unsigned index) {
  return llvm::formatv("  %t{0} = transform.structured.match attributes "
                       "{{{1} = {0} : i64} in %root : (!transform.any_op) -> "
                       "!transform.any_op\n",
                       index, kTargetAttr)
      .str();
}

/// Keeps the accumulator of schedule `index`'s k loop (`%kloop<index>`) in
/// registers across it: read before the loop, written after.
static std::string hoistAccumulator(unsigned index) {
  return llvm::formatv("  transform.loop.hoist_loop_invariant_subsets "
                       "%kloop{0} : !transform.any_op\n",
                       index)
      .str();
}

/// Vectorizes every linalg op in `nest` (a handle) and folds the result
/// into contractions held in registers.
static std::string vectorizeNest(unsigned index, StringRef nest) {
  return llvm::formatv(
             "  %lin{0} = transform.structured.match interface{{LinalgOp} in "
             "{1} : (!transform.any_op) -> !transform.any_op\n"
             "  transform.structured.vectorize %lin{0} : !transform.any_op\n"
             "  transform.apply_patterns to %func {{\n"
             "    transform.apply_patterns.canonicalization\n"
             "    transform.apply_patterns.tensor.fold_tensor_subset_ops_into_"
             "vector_transfers\n"
             "  } : !transform.any_op\n"
             "  transform.apply_patterns to %func {{\n"
             "    transform.apply_patterns.vector.transfer_permutation_"
             "patterns\n"
             "    transform.apply_patterns.vector.reduction_to_contract\n"
             "  } : !transform.any_op\n"
             "  transform.apply_cse to %func : !transform.any_op\n",
             index, nest)
      .str();
}

/// Marks the k loop of schedule `index` (`%kloop<index>`) for
/// lamina-cpu-prefetch-rows: it streams its weight panel from memory.
static std::string prefetchRowsOf(unsigned index) {
  return llvm::formatv(
             "  %distance{0} = transform.param.constant {1} : i64 -> "
             "!transform.param<i64>\n"
             "  transform.annotate %kloop{0} \"{2}\" = %distance{0} : "
             "!transform.any_op, !transform.param<i64>\n",
             index, kPrefetchDistanceBytes,
             LaminaDialect::kPrefetchRowsAttrName)
      .str();
}

/// The schedule of an uncached matmul whose register tiles share each
/// panel of W chunk by chunk: a loop over groups of blocks (fill, matmul
/// and epilogue fused), in it a loop over chunks of k, in that the register
/// tiles' rows, then k in steps.
static std::string buildChunkedSchedule(unsigned index, const TilePlan &plan,
                                        const LoopLayout &layout,
                                        bool targetIsMatmul) {
  std::string script = matchTarget(index);
  std::string target = "t" + std::to_string(index);
  std::string group = "g" + std::to_string(index);
  script += fuseStep(group, target, layout.tile(0, plan.registerBlocks), {});
  std::string nest = "%" + group + "_loops#0";
  LoopLayout matmulLayout;
  SmallVector<int64_t> rowTile = matmulLayout.tile(plan.registerRows, 0);
  SmallVector<int64_t> epilogueRowTile = layout.tile(plan.registerRows, 0);
  script += llvm::formatv(
      "  %mm{0} = transform.structured.match attributes {{lamina.stage = "
      "\"matmul\"} in {1} : (!transform.any_op) -> !transform.any_op\n"
      "  %mmc{0}, %chunk{0} = transform.structured.tile_using_for %mm{0} "
      "tile_sizes {2} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n"
      "  %mmr{0}, %rows{0} = transform.structured.tile_using_for %mmc{0} "
      "tile_sizes {3} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n"
      "  %mmk{0}, %kloop{0} = transform.structured.tile_using_for %mmr{0} "
      "tile_sizes {4} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n"
      "  %fill{0} = transform.structured.match ops{{[\"linalg.fill\"]} in {1} "
      ": (!transform.any_op) -> !transform.any_op\n"
      "  %fillr{0}, %fillrows{0} = transform.structured.tile_using_for "
      "%fill{0} tile_sizes {5} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n",
      index, nest, tileSizes(matmulLayout.kTile(plan.kChunk)),
      tileSizes(rowTile), tileSizes(matmulLayout.kTile(plan.kStep)),
      tileSizes(SmallVector<int64_t>{plan.registerRows, 0, 0}));
  if (!targetIsMatmul)
    script += llvm::formatv(
        "  %er{0}, %erows{0} = transform.structured.tile_using_for %{1} "
        "tile_sizes {2} : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n",
        index, group, tileSizes(epilogueRowTile));
  script += vectorizeNest(index, nest);
  script += hoistAccumulator(index);
  script += prefetchRowsOf(index);
  return script;
}

/// The schedule of one target (an epilogue, or a matmul without one).
static std::string buildSchedule(unsigned index, const TilePlan &plan,
                                 const LoopLayout &layout,
                                 bool targetIsMatmul, bool threaded) {
  std::string script = matchTarget(index);
  std::string current = "t" + std::to_string(index);
  if (plan.slabRows) {
    std::string slab = "s" + std::to_string(index);
    script += fuseStep(slab, current, layout.tile(plan.slabRows, 0), {});
    current = slab;
  }
  if (plan.cacheRows && threaded) {
    // Cache tiles as an scf.forall shared out among threads, with the
    // matmul (when the target is its epilogue) and the fill fused in.
    script += llvm::formatv(
        "  %c{0}, %forall{0} = transform.structured.tile_using_forall %{1} "
        "tile_sizes {2} : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n",
        index, current,
        tileSizes(layout.tile(plan.cacheRows, plan.cacheBlocks)));
    std::string forall = llvm::formatv("%forall{0}", index);
    SmallVector<StringRef> producers;
    if (!targetIsMatmul)
      producers.push_back(kMatmulAttr);
    producers.push_back(kFillAttr);
    for (auto [step, producer] : llvm::enumerate(producers)) {
      script += llvm::formatv(
          "  %prod{0}_{1} = transform.structured.match attributes {{{2} = {0} "
          ": i64} in %root : (!transform.any_op) -> !transform.any_op\n"
          "  %fused{0}_{1}, %forall{0}_{1} = "
          "transform.structured.fuse_into_containing_op %prod{0}_{1} into {3} "
          ": (!transform.any_op, !transform.any_op) -> (!transform.any_op, "
          "!transform.any_op)\n",
          index, step, producer, forall);
      forall = llvm::formatv("%forall{0}_{1}", index, step);
    }
    current = "c" + std::to_string(index);
  } else if (plan.cacheRows) {
    std::string next = "c" + std::to_string(index);
    script += fuseStep(next, current,
                       layout.tile(plan.cacheRows, plan.cacheBlocks),
                       layout.blocksOuter());
    current = next;
  }
  std::string inner = "r" + std::to_string(index);
  script += fuseStep(inner, current,
                     layout.tile(plan.registerRows, plan.tileRegisterBlocks
                                                        ? plan.registerBlocks
                                                        : 0),
                     plan.registerRows && plan.tileRegisterBlocks
                         ? layout.blocksOuter()
                         : SmallVector<int64_t>());
  // The register-tile loop nest holds the matmul tile, fill and epilogue.
  std::string nest = "%" + inner + "_loops#0";
  if (plan.kStep) {
    script += llvm::formatv(
        "  %mm{0}r = transform.structured.match attributes {{lamina.stage = "
        "\"matmul\"} in {1} : (!transform.any_op) -> !transform.any_op\n"
        "  %k{0}, %kloop{0} = transform.structured.tile_using_for %mm{0}r "
        "tile_sizes {2} : (!transform.any_op) -> "
        "(!transform.any_op, !transform.any_op)\n",
        index, nest, tileSizes(layout.kTile(plan.kStep)));
  }
  script += vectorizeNest(index, nest);
  if (plan.kStep)
    script += hoistAccumulator(index);
  // Without a cache tile no other register tile reads this one's weight
  // panel soon after it: the loop streams it from memory, and
  // lamina-cpu-prefetch-rows prefetches it ahead (at 16 × 4096 × 4096:
  // 7.1 → 4.5 ms; with cache tiles, where the panel comes from L2,
  // prefetches made 2048 × 1024 × 4096 5% slower).
  if (plan.kStep && !plan.cacheRows)
    script += prefetchRowsOf(index);
  return script;
}

/// The matmuls between layers (attention's scores and values: a
/// `linalg.batch_matmul` per head, or a plain `linalg.matmul`), B read
/// along N: register tiles of 4 rows × 16 columns (per batch), K in steps
/// of 4 with the C tile held in registers across them. Static shapes whose
/// M, N and K the tiles divide; others stay loop nests. Producers are not
/// fused into the tiles: a transposed operand (kᵀ, the backward's) would
/// be pulled in and vectorized with the contraction.
static std::optional<SmallVector<int64_t>>
planBetweenLayersMatmul(linalg::LinalgOp op, bool wide) {
  if (!op.hasPureTensorSemantics() || hasStage(op, "matmul") ||
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
  int64_t m = ranges[batched], n = ranges[batched + 1],
          k = ranges[batched + 2];
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

static std::string buildBetweenLayersMatmulSchedule(unsigned index,
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
  return script + hoistAccumulator(index);
}

/// Element-wise ops (residual adds, a lone bias add or activation, an
/// epilogue of an unpacked matmul): rows of 16 lanes, vectorized. Ops on
/// i64 or i32 integers (LNS codes, whose additions are long chains) take
/// rows of 32 lanes where they fit: measured 20% faster than 16 on AVX2
/// for the K-outer LNS linear layers (table mode, and ideal mode beyond
/// the piecewise kernel's f ≤ 25), more independent chains per tile.
/// A last dim of 2, 4 or 8 (dropout's four words of a group, interleaved)
/// joins enough of the dim before it for 64 bytes of its result per tile
/// (16 lanes at least), where that dim allows.
static std::optional<SmallVector<int64_t>>
planElementwise(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() ||
      op.getNumReductionLoops() != 0 || hasStage(op, "matmul"))
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
      return sizes;
  }
  if (last % 16 != 0)
    return std::nullopt;
  bool codes = element.isSignlessInteger(64) || element.isSignlessInteger(32);
  SmallVector<int64_t> sizes(ranges.size(), 1);
  sizes.back() = codes && ranges.back() % 32 == 0 ? 32 : 16;
  return sizes;
}

/// Reductions along the last dim (a loss's or a softmax's row maxima and
/// sums, a norm's statistics) whose combiner reorders safely: float
/// additions and maxima. Each row is tiled off, its reduction split into
/// 16 partial lanes accumulated in registers across the row and combined
/// once at its end, so the row's element-wise work (exp, subtractions) is
/// vectorized. LNS sums keep their order: their combiners are not floats.
/// Bodies reading `linalg.index` stay loops: upstream's partial-reduction
/// tiling (MLIR 22) leaves the index of the split dim relative to its tile.
static std::optional<SmallVector<int64_t>>
planRowReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || hasStage(op, "matmul") ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      llvm::is_contained(ranges, 0) || ranges.back() % 16 != 0 ||
      ranges.back() <= 16)
    return std::nullopt;
  if (hasBooleanOperand(op))
    return std::nullopt;
  SmallVector<Operation *> combiners;
  if (!isa<FloatType>(getElementTypeOrSelf(op.getDpsInits()[0].getType())) ||
      !matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1 ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp>(combiners[0]))
    return std::nullopt;
  SmallVector<int64_t> rows(ranges.size(), 1);
  rows.back() = 0;
  return rows;
}

static std::string buildRowReductionSchedule(unsigned index,
                                             ArrayRef<int64_t> rows) {
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
  lanes.back() = 16;
  script += llvm::formatv(
      "  %fill{0}, %part{0}, %combine{0}, %lanes{0} = "
      "transform.structured.tile_reduction_using_for {1} by tile_sizes = {2} "
      ": (!transform.any_op) -> (!transform.any_op, !transform.any_op, "
      "!transform.any_op, !transform.any_op)\n"
      "  transform.structured.vectorize %part{0} : !transform.any_op\n"
      "  transform.structured.vectorize %combine{0} : !transform.any_op\n"
      "  transform.structured.vectorize %fill{0} : !transform.any_op\n"
      "  transform.apply_patterns to %func {{\n"
      "    transform.apply_patterns.canonicalization\n"
      "    transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_"
      "transfers\n"
      "  } : !transform.any_op\n"
      "  transform.loop.hoist_loop_invariant_subsets %lanes{0} : "
      "!transform.any_op\n",
      index, row, tileSizes(lanes));
  return script;
}

/// Whether `op` reads a tensor at computed indices (an embedding's
/// gather): its vectorization must be told to handle n-D tensor.extract
/// (a contiguous load along the row, a gather otherwise).
static bool hasExtract(Operation *op) {
  return op->walk([](tensor::ExtractOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Float sums over every dim but the last: a bias's gradient (the column
/// sums of dY [..., N], a `linalg.reduce`) or a norm's weight and bias
/// gradients (a generic with one sum per parameter, the row statistics
/// broadcast along N). N a multiple of 16: chunks of up to 64 columns, each
/// chunk's sums held in registers while the rows stream past, one vector
/// add per row and sum (the rows' order of addition is kept). Returns the
/// tile sizes; the schedule puts the column chunks outermost.
static std::optional<SmallVector<int64_t>>
planColumnSum(linalg::LinalgOp op) {
  if (!isa<linalg::ReduceOp, linalg::GenericOp>(op) ||
      !op.hasPureTensorSemantics() || hasStage(op, "matmul") ||
      !op.getBlock()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rank = ranges.size();
  if (rank < 2 || llvm::any_of(ranges, ShapedType::isDynamic) ||
      llvm::is_contained(ranges, 0) || ranges.back() % 16 != 0)
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
  SmallVector<int64_t> sizes(rank, 1);
  int64_t columns = ranges.back();
  sizes.back() = columns % 64 == 0 ? 64 : columns % 32 == 0 ? 32 : 16;
  return sizes;
}

static std::string buildColumnSumSchedule(unsigned index,
                                          ArrayRef<int64_t> sizes) {
  int64_t rank = sizes.size();
  std::string types = handleTypes(rank + 1);
  // Column chunks outermost, then the summed dims.
  SmallVector<int64_t> interchange = {rank - 1};
  llvm::append_range(interchange, llvm::seq<int64_t>(0, rank - 1));
  std::string script = matchTarget(index);
  script += llvm::formatv(
      "  %s{0}, %s{0}_loops:{1} = transform.structured.tile_using_for %t{0} "
      "tile_sizes {2} interchange = {3} : (!transform.any_op) -> {4}\n"
      "  transform.structured.vectorize %s{0} : !transform.any_op\n"
      "  transform.apply_patterns to %func {{\n"
      "    transform.apply_patterns.canonicalization\n"
      "    transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_"
      "transfers\n"
      "  } : !transform.any_op\n",
      index, rank, tileSizes(sizes), tileSizes(interchange), types);
  // The chunk's sums stay in registers across the summed dims' loops,
  // innermost first.
  for (int64_t loop = rank - 1; loop >= 1; --loop)
    script += llvm::formatv("  transform.loop.hoist_loop_invariant_subsets "
                            "%s{0}_loops#{1} : !transform.any_op\n",
                            index, loop);
  return script;
}

static std::string buildElementwiseSchedule(unsigned index,
                                            ArrayRef<int64_t> sizes,
                                            bool extracts = false) {
  std::string types = handleTypes(sizes.size() + 1);
  return matchTarget(index) +
         llvm::formatv(
             "  %v{0}, %v{0}_loops:{1} = transform.structured.tile_using_for "
             "%t{0} tile_sizes {2} : (!transform.any_op) -> {3}\n"
             "  transform.structured.vectorize %v{0} {4}: "
             "!transform.any_op\n",
             index, sizes.size(), tileSizes(sizes), types,
             extracts ? "{vectorize_nd_extract} " : "")
             .str();
}

/// Transposes (the backward's Wᵀ, dyᵀ, xᵀ, weight packing) in 8×8 tiles,
/// which lamina-cpu-lower-vectors lowers to AVX2 shuffles and blends
/// (measured: a 16 MiB transpose 21 → 15 ms against 16×16 tiles moved
/// element by element), scheduled before any matmul: a matmul's fusion
/// would otherwise pull a whole transposed panel (16 × K) into its tile and
/// vectorize it as one huge vector transpose. Innermost two dims, static
/// and multiples of 8.
static std::optional<SmallVector<int64_t>>
planTranspose(linalg::TransposeOp op) {
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
    if (shape.back() % 16 != 0)
      return std::nullopt;
    sizes.back() = 16;
    return sizes;
  }
  if (shape[shape.size() - 1] % 8 != 0 || shape[shape.size() - 2] % 8 != 0)
    return std::nullopt;
  sizes[sizes.size() - 1] = 8;
  sizes[sizes.size() - 2] = 8;
  return sizes;
}

/// A transpose that moves whole rows of 16 (`[a, b, 16] → [b, a, 16]`: the
/// packing of a weight read transposed, Wᵀ, xᵀ or an activation in the
/// backward) as copies of 8 rows × 16 in the source's order: each source
/// row streams once and each tile writes 8 × 64 contiguous bytes (the
/// output's order read a 64-byte piece of every source row in turn).
static bool isRowTranspose(linalg::TransposeOp op) {
  auto type = cast<ShapedType>(op.getInit().getType());
  return op.hasPureTensorSemantics() && type.hasStaticShape() &&
         op.getPermutation() == ArrayRef<int64_t>{1, 0, 2} &&
         (type.getDimSize(2) == 16 || type.getDimSize(2) == 8) &&
         type.getDimSize(1) % 8 == 0 &&
         type.getDimSize(0) > 1 && type.getDimSize(1) > 8;
}

static std::string buildRowTransposeSchedule(unsigned index) {
  return matchTarget(index) +
         llvm::formatv(
             "  %v{0}, %v{0}_loops:2 = transform.structured.tile_using_for "
             "%t{0} tile_sizes [1, 8, 0] interchange = [1, 0, 2] : "
             "(!transform.any_op) -> (!transform.any_op, !transform.any_op, "
             "!transform.any_op)\n"
             "  transform.structured.vectorize %v{0} : !transform.any_op\n",
             index)
             .str();
}

namespace {
struct LaminaCpuTileAndVectorizePass
    : mlir::lamina::impl::LaminaCpuTileAndVectorizeBase<
          LaminaCpuTileAndVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyVectorBits(module, vectorBits)))
      return signalPassFailure();
    if (vectorBits == 512)
      allowWideVectors(module);
    std::string body;
    unsigned index = 0;
    // Tags `op` as the target of the next schedule, whose number it is;
    // returns the tag.
    auto markTarget = [&](Operation *op) {
      auto tag = IntegerAttr::get(IntegerType::get(&getContext(), 64), index);
      op->setAttr(kTargetAttr, tag);
      return tag;
    };
    module.walk([&](linalg::TransposeOp op) {
      if (isRowTranspose(op)) {
        markTarget(op);
        body += buildRowTransposeSchedule(index++);
      } else if (std::optional<SmallVector<int64_t>> sizes =
                     planTranspose(op)) {
        markTarget(op);
        body += buildElementwiseSchedule(index++, *sizes);
      }
    });
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<SmallVector<int64_t>> sizes = planColumnSum(op)) {
        markTarget(op);
        body += buildColumnSumSchedule(index++, *sizes);
      }
    });
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<SmallVector<int64_t>> sizes =
              planBetweenLayersMatmul(op, vectorBits == 512)) {
        markTarget(op);
        body += buildBetweenLayersMatmulSchedule(index++, *sizes);
      }
    });
    module.walk([&](linalg::GenericOp op) {
      linalg::GenericOp matmul;
      bool targetIsMatmul = false;
      if (hasStage(op, "epilogue") && op.getNumLoops() == 3) {
        for (Value operand : op->getOperands())
          if ((matmul = getPackedMatmul(operand.getDefiningOp())))
            break;
      } else if (getPackedMatmul(op) &&
                 llvm::none_of(op->getUsers(), [](Operation *user) {
                   return hasStage(user, "epilogue");
                 })) {
        matmul = op;
        targetIsMatmul = true;
      }
      if (!matmul || !matmul.hasPureTensorSemantics()) {
        if (std::optional<SmallVector<int64_t>> sizes = planElementwise(op)) {
          markTarget(op);
          body += buildElementwiseSchedule(index++, *sizes, hasExtract(op));
        } else if (std::optional<SmallVector<int64_t>> rows =
                       planRowReduction(op)) {
          markTarget(op);
          body += buildRowReductionSchedule(index++, *rows);
        }
        return;
      }
      SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return;
      LoopLayout layout;
      layout.numLoops = targetIsMatmul ? matmul.getNumLoops() : 3;
      int64_t rows = ranges[0], blocks = ranges[1], depth = ranges[3];
      if (matmul.getNumLoops() == 5) {
        layout.rowPanel = ranges[1];
        rows = ranges[0] * ranges[1];
        blocks = ranges[2];
        depth = ranges[4];
      }
      std::optional<TilePlan> plan =
          planTiles(rows, blocks, depth, getInputBytes(matmul),
                    vectorBits == 512, threads > 1);
      // A panel is one register tile's rows.
      if (!plan || (layout.rowPanel && plan->registerRows != layout.rowPanel &&
                    !(plan->registerRows == 0 && rows == layout.rowPanel)))
        return;
      IntegerAttr tag = markTarget(op);
      matmul->setAttr(kMatmulAttr, tag);
      if (Operation *fill = matmul.getDpsInits()[0].getDefiningOp())
        fill->setAttr(kFillAttr, tag);
      if (plan->kChunk && !layout.rowPanel)
        body += buildChunkedSchedule(index++, *plan, layout, targetIsMatmul);
      else
        body += buildSchedule(index++, *plan, layout, targetIsMatmul,
                              threads > 1);
    });
    if (index == 0)
      return;
    std::string script =
        "module attributes {transform.with_named_sequence} {\n"
        "transform.named_sequence @schedule(%root: !transform.any_op "
        "{transform.readonly}) {\n"
        "  %func = transform.structured.match ops{[\"func.func\"]} in %root "
        ": (!transform.any_op) -> !transform.any_op\n" +
        body +
        "  transform.apply_patterns to %func {\n"
        "    transform.apply_patterns.canonicalization\n"
        "  } : !transform.any_op\n"
        "  transform.yield\n}\n}\n";
    if (failed(applyTransformScript(module, script, "schedule")))
      return signalPassFailure();
    module.walk([](Operation *op) {
      for (StringRef name : {kTargetAttr, kMatmulAttr, kFillAttr})
        op->removeAttr(name);
    });
  }
};

} // namespace
