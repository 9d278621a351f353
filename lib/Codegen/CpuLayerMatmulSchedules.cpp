//===- CpuLayerMatmulSchedules.cpp - Schedules of the layers' matmuls -----===//
//
// A linear layer's matmul on its packed weight (a generic over (m, n1, n0,
// k), or (m1, m0, n1, n0, k) with x packed in panels of m0 rows), with its
// epilogue: cache tiles sized from the static shape for L2/L3, register
// tiles of rows × blocks of 16 features, k in steps with the accumulators
// held in registers.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::cpu;

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
/// The fewest steps of k a chunk of k takes (below it the accumulators
/// go back to memory too often to gain from the chunk's cache reuse).
static constexpr int64_t kMinChunkSteps = 16;
/// How far ahead a loop streaming its weight prefetches it: 4 KiB (at
/// 16 × 4096 × 4096 on an AVX-512 Xeon, 2-8 KiB were alike).
static constexpr int64_t kPrefetchDistanceBytes = 4096;

/// The packed matmul: a generic over (m, n1, n0, k), or over
/// (m1, m0, n1, n0, k) when its input is packed in panels of m0 rows; k is
/// (k2, p) when bf16 operands are packed in pairs of k.
static linalg::GenericOp getPackedMatmul(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !hasLoweredStage(generic, LoweredStage::matmul))
    return {};
  unsigned parallel = generic.getNumParallelLoops();
  if ((parallel != 3 && parallel != 4) ||
      generic.getNumReductionLoops() > 2)
    return {};
  return generic;
}

/// Whether a packed matmul's k is split in pairs (k2, p).
static bool isPaired(linalg::GenericOp matmul) {
  return matmul.getNumReductionLoops() == 2;
}

/// The size of a matmul's x elements (4 for a type without a bit width).
static int64_t getInputBytes(linalg::GenericOp matmul) {
  Type element = getElementTypeOrSelf(matmul.getDpsInputs()[0].getType());
  return element.isIntOrFloat() ? element.getIntOrFloatBitWidth() / 8 : 4;
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
  // 0: one thread; else each thread runs the plan on its own part of this
  // many blocks (the tile sizes above are for one part).
  int64_t threadBlocks = 0;
};
} // namespace

/// Chooses tile sizes for a matmul of M rows, N1 blocks of 16 and depth K,
/// x's elements `inputBytes` wide; `wide`: 512-bit vectors (a block of 16
/// features is one register). Every tile divides its extent and is smaller than
/// it: a one-trip loop would be folded away under the schedule's handles.
static std::optional<TilePlan> planTiles(int64_t m, int64_t n1, int64_t k,
                                         int64_t inputBytes, bool wide) {
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
  // dW over 512 tokens 1.16×; with 1 MiB of rows (K = 2048) 1.2× slower.
  if (m >= 256 && m % 128 == 0 && n1 > 2 && n1 % 2 == 0) {
    plan.cacheRows = 128;
    plan.cacheBlocks = 2;
    if (plan.cacheRows * k * inputBytes <= kSharedRowsBytes && n1 % 8 == 0 &&
        n1 > 8)
      plan.cacheBlocks = 8;
  }
  // Each slab reads all of W again, but from L3, where x no longer fitted:
  // on Zen 5, slabs of 8 MiB made 2048 × 4096 × 1024 112-118 → 94-95 ms,
  // 2048 × 4096 × 4096 1.2× faster, the backward's dX and dW over 2048
  // tokens 1.15-1.4×; slabs of 4 MiB the backward's
  // dW 4096 × 1024 over 512 tokens (8 MiB of dY) 25.2 → 23.1 ms, over 2048
  // tokens 108.8 → 101.7, the rest alike or 1-3% faster. Rows of exactly
  // one slab's size are split too: bf16 2048 × 1024 × 4096 (4 MiB of x in
  // pairs of k) ran 144 ms whole, 41 ms in two slabs.
  if (plan.cacheRows && m * k * inputBytes >= kStreamedRowsBytes)
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
    // The largest chunk within that budget which k splits into evenly, of
    // at least 16 steps of k. A search by halving from k / 2 missed such
    // chunks where k has few factors of 2: a vocabulary of 50304 = 2^7 ·
    // 3 · 131 got chunks of 24 (the backward's dX of GPT-2's head), which
    // put the accumulators back to memory every 6 steps of k.
    int64_t bytesPerK = (m + plan.registerBlocks * 16) * inputBytes;
    int64_t budget = std::min(k / 2, kChunkBytes / bytesPerK);
    for (int64_t chunk = budget - budget % plan.kStep;
         chunk >= kMinChunkSteps * plan.kStep; chunk -= plan.kStep)
      if (k % chunk == 0) {
        plan.kChunk = chunk;
        break;
      }
  }
  return plan;
}

namespace {
/// Where a schedule's tiles of rows and blocks of 16 features go among its
/// target's loops: (m, n1, n0[, k]), or (m1, m0, n1, n0, k) with rows in
/// panels of m0; k is (k2, p) with `pairs`.
struct LoopLayout {
  unsigned numLoops = 4;
  int64_t rowPanel = 0; // 0: the rows are one loop
  bool pairs = false;   // the matmul's k is split in pairs (k2, p)

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
  /// The matmul's k (k2 with pairs, its pairs' p untiled) in steps of `k`.
  SmallVector<int64_t> kTile(int64_t k) const {
    SmallVector<int64_t> sizes((rowPanel ? 5 : 4) + (pairs ? 1 : 0), 0);
    sizes[sizes.size() - (pairs ? 2 : 1)] = k;
    return sizes;
  }
};
} // namespace

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

/// Shares the blocks of schedule `index`'s target out among threads: an
/// scf.forall over parts of `plan.threadBlocks` blocks, the matmul (when
/// the target is its epilogue) and its fill fused in, each part then
/// scheduled as one thread's matmul. Sets `current` to the part's target.
/// Each thread keeps its part's blocks of W, and both read the same rows of
/// x: at 2048 × 1024 × 4096 two processes each computing half of the
/// features ran as fast as one alone, while cache tiles shared out (rows
/// split between the threads, W streamed past each) ran 10% slower.
static std::string shareOutBlocks(unsigned index, const TilePlan &plan,
                                  const LoopLayout &layout, bool targetIsMatmul,
                                  std::string &current) {
  std::string script = llvm::formatv(
      "  %p{0}, %forall{0} = transform.structured.tile_using_forall %{1} "
      "tile_sizes {2} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n",
      index, current, tileSizes(layout.tile(0, plan.threadBlocks)));
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
  current = "p" + std::to_string(index);
  return script;
}

/// The schedule of an uncached matmul whose register tiles share each
/// panel of W chunk by chunk: a loop over groups of blocks (fill, matmul
/// and epilogue fused), in it a loop over chunks of k, in that the register
/// tiles' rows, then k in steps. `target`: the handle of the op scheduled.
static OpSchedule buildChunkedSchedule(unsigned index, const TilePlan &plan,
                                       const LoopLayout &layout,
                                       const LayerMatmul &layer,
                                       StringRef target) {
  bool targetIsMatmul = layer.targetIsMatmul;
  std::string group = "g" + std::to_string(index);
  SmallVector<int64_t> groupTile = layout.tile(0, plan.registerBlocks);
  std::string script = fuseStep(group, target, groupTile, {});
  if (layer.rotates)
    script += mergeFusedCopies(group, groupTile);
  std::string nest = "%" + group + "_loops#0";
  LoopLayout matmulLayout;
  matmulLayout.pairs = layout.pairs;
  matmulLayout.numLoops += layout.pairs ? 1 : 0;
  SmallVector<int64_t> rowTile = matmulLayout.tile(plan.registerRows, 0);
  SmallVector<int64_t> epilogueRowTile = layout.tile(plan.registerRows, 0);
  script += matchStage("mm" + std::to_string(index), LoweredStage::matmul,
                       nest);
  script += llvm::formatv(
      "  %mmc{0}, %chunk{0} = transform.structured.tile_using_for %mm{0} "
      "tile_sizes {2} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n"
      "  %mmr{0}, %rows{0} = transform.structured.tile_using_for %mmc{0} "
      "tile_sizes {3} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n"
      "  %mmk{0}, %kloop{0} = transform.structured.tile_using_for %mmr{0} "
      "tile_sizes {4} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n"
      "  %fill{0} = transform.structured.match attributes {{{6} = {0} : i64} "
      "in {1} : (!transform.any_op) -> !transform.any_op\n"
      "  %fillr{0}, %fillrows{0} = transform.structured.tile_using_for "
      "%fill{0} tile_sizes {5} : (!transform.any_op) -> (!transform.any_op, "
      "!transform.any_op)\n",
      index, nest, tileSizes(matmulLayout.kTile(plan.kChunk)),
      tileSizes(rowTile), tileSizes(matmulLayout.kTile(plan.kStep)),
      tileSizes(SmallVector<int64_t>{plan.registerRows, 0, 0}), kFillAttr);
  if (!targetIsMatmul)
    script += llvm::formatv(
        "  %er{0}, %erows{0} = transform.structured.tile_using_for %{1} "
        "tile_sizes {2} : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n",
        index, group, tileSizes(epilogueRowTile));
  // A rotary epilogue's pair partners, row by row with it.
  if (layer.rotates) {
    script += matchStage("pp" + std::to_string(index),
                         LoweredStage::pair_partners, nest);
    script += llvm::formatv(
        "  %ppr{0}, %pprows{0} = transform.structured.fuse_into_containing_op "
        "%pp{0} into %erows{0} : (!transform.any_op, !transform.any_op) -> "
        "(!transform.any_op, !transform.any_op)\n",
        index);
  }
  script += vectorizeNest(index, nest, layer.rotates);
  return {script, hoistAccumulator(index) + prefetchRowsOf(index),
          /*contracts=*/true};
}

/// The schedule of one target (an epilogue, or a matmul without one) whose
/// handle is `target`.
static OpSchedule buildSchedule(unsigned index, const TilePlan &plan,
                                const LoopLayout &layout,
                                const LayerMatmul &layer, StringRef target) {
  std::string script;
  std::string current = target.str();
  // One fuse step; a rotary epilogue's copies of the matmul merged.
  auto fuse = [&](StringRef result, ArrayRef<int64_t> sizes,
                  ArrayRef<int64_t> interchange) {
    script += fuseStep(result, current, sizes, interchange);
    if (layer.rotates)
      script += mergeFusedCopies(result, sizes);
    current = result.str();
  };
  if (plan.slabRows)
    fuse("s" + std::to_string(index), layout.tile(plan.slabRows, 0), {});
  if (plan.cacheRows)
    fuse("c" + std::to_string(index),
         layout.tile(plan.cacheRows, plan.cacheBlocks), layout.blocksOuter());
  std::string inner = "r" + std::to_string(index);
  fuse(inner,
       layout.tile(plan.registerRows,
                   plan.tileRegisterBlocks ? plan.registerBlocks : 0),
       plan.registerRows && plan.tileRegisterBlocks ? layout.blocksOuter()
                                                    : SmallVector<int64_t>());
  // The register-tile loop nest holds the matmul tile, fill and epilogue.
  std::string nest = "%" + inner + "_loops#0";
  if (plan.kStep) {
    script += matchStage(llvm::formatv("mm{0}r", index).str(),
                         LoweredStage::matmul, nest);
    script += llvm::formatv(
        "  %k{0}, %kloop{0} = transform.structured.tile_using_for %mm{0}r "
        "tile_sizes {2} : (!transform.any_op) -> "
        "(!transform.any_op, !transform.any_op)\n",
        index, nest, tileSizes(layout.kTile(plan.kStep)));
  }
  script += vectorizeNest(index, nest, layer.rotates);
  std::string after;
  if (plan.kStep)
    after += hoistAccumulator(index);
  // Without a cache tile no other register tile reads this one's weight
  // panel soon after it: the loop streams it from memory, and
  // lamina-cpu-prefetch-rows prefetches it ahead (at 16 × 4096 × 4096:
  // 7.1 → 4.5 ms; with cache tiles, where the panel comes from L2,
  // prefetches made 2048 × 1024 × 4096 5% slower).
  if (plan.kStep && !plan.cacheRows)
    after += prefetchRowsOf(index);
  return {script, after, /*contracts=*/true};
}

std::optional<LayerMatmul> cpu::getLayerMatmul(linalg::GenericOp op) {
  LayerMatmul target;
  if (hasLoweredStage(op, LoweredStage::epilogue) && op.getNumLoops() == 3) {
    for (Value operand : op->getOperands())
      if ((target.matmul = getPackedMatmul(operand.getDefiningOp())))
        break;
    target.rotates = llvm::any_of(op->getOperands(), [](Value operand) {
      return hasLoweredStage(operand.getDefiningOp(),
                             LoweredStage::pair_partners);
    });
  } else if (getPackedMatmul(op) &&
             llvm::none_of(op->getUsers(), [](Operation *user) {
               return hasLoweredStage(user, LoweredStage::epilogue);
             })) {
    target.matmul = op;
    target.targetIsMatmul = true;
  }
  if (!target.matmul || !target.matmul.hasPureTensorSemantics())
    return std::nullopt;
  return target;
}

std::optional<OpSchedule>
cpu::buildLayerMatmulSchedule(unsigned index, const LayerMatmul &target,
                              bool wide, unsigned threads) {
  linalg::GenericOp matmul = target.matmul;
  SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  LoopLayout layout;
  layout.numLoops = target.targetIsMatmul ? matmul.getNumLoops() : 3;
  layout.pairs = isPaired(matmul);
  int64_t rows = ranges[0], blocks = ranges[1], depth = ranges[3];
  if (matmul.getNumParallelLoops() == 4) {
    layout.rowPanel = ranges[1];
    rows = ranges[0] * ranges[1];
    blocks = ranges[2];
    depth = ranges[4];
  }
  // With threads, each runs the plan on its part of the blocks (a rotary
  // epilogue's pair partners are not fused into the threads' parts: one
  // thread runs it; lamina-cpu-pipeline fuses no rotation with threads).
  int64_t parts =
      threads > 1 && blocks % threads == 0 && !target.rotates ? threads : 1;
  // A pair of k is one step of the tiles' k: twice the elements.
  int64_t inputBytes = getInputBytes(matmul) * (layout.pairs ? 2 : 1);
  std::optional<TilePlan> plan =
      planTiles(rows, blocks / parts, depth, inputBytes, wide);
  if (!plan && parts > 1) {
    parts = 1;
    plan = planTiles(rows, blocks, depth, inputBytes, wide);
  }
  if (plan && parts > 1)
    plan->threadBlocks = blocks / parts;
  // A panel is one register tile's rows.
  if (!plan || (layout.rowPanel && plan->registerRows != layout.rowPanel &&
                !(plan->registerRows == 0 && rows == layout.rowPanel)))
    return std::nullopt;
  std::string script = matchTarget(index);
  std::string handle = "t" + std::to_string(index);
  if (plan->threadBlocks)
    script +=
        shareOutBlocks(index, *plan, layout, target.targetIsMatmul, handle);
  OpSchedule schedule =
      plan->kChunk && !layout.rowPanel
          ? buildChunkedSchedule(index, *plan, layout, target, handle)
          : buildSchedule(index, *plan, layout, target, handle);
  schedule.steps = script + schedule.steps;
  return schedule;
}
