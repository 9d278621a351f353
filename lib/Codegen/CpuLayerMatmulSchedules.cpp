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
cpu::buildLayerMatmulSchedule(unsigned index, const LayerMatmul &target) {
  linalg::GenericOp matmul = target.matmul;
  CpuMatmulAttr layout = getCpuMatmul(matmul);
  SmallVector<int64_t> ranges = matmul.getStaticLoopRanges();
  if (!layout || !layout.getTiles() ||
      llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  TilePlan plan = TilePlan::fromAttr(layout.getTiles());
  LoopLayout loops;
  loops.numLoops = target.targetIsMatmul ? matmul.getNumLoops() : 3;
  loops.pairs = isPaired(matmul);
  if (matmul.getNumParallelLoops() == 4)
    loops.rowPanel = ranges[1];
  std::string script = matchTarget(index);
  std::string handle = "t" + std::to_string(index);
  if (plan.threadBlocks)
    script += shareOutBlocks(index, plan, loops, target.targetIsMatmul, handle);
  OpSchedule schedule =
      plan.kChunk && !loops.rowPanel
          ? buildChunkedSchedule(index, plan, loops, target, handle)
          : buildSchedule(index, plan, loops, target, handle);
  schedule.steps = script + schedule.steps;
  return schedule;
}
