//===- CpuTilePlans.cpp - Tile sizes of the layers' matmuls ---------------===//
//
// The cache and register tiles of a linear layer's packed matmul, chosen
// from its static shape by lamina-select-cpu-strategy and recorded as a
// #lamina.cpu_tiles, which lamina-cpu-tile-and-vectorize applies.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

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

std::optional<TilePlan> cpu::planLayerMatmulTiles(const LayerMatmulShape &shape,
                                                  bool wide,
                                                  unsigned threads) {
  // With threads, each runs the plan on its part of the blocks (a rotary
  // epilogue's pair partners are not fused into the threads' parts: one
  // thread runs it; lamina-cpu-pipeline fuses no rotation with threads).
  int64_t blocks = shape.blocks;
  int64_t parts = threads > 1 && blocks % threads == 0 && !shape.rotates
                      ? threads
                      : 1;
  std::optional<TilePlan> plan =
      planTiles(shape.rows, blocks / parts, shape.depth, shape.inputBytes,
                wide);
  if (!plan && parts > 1) {
    parts = 1;
    plan = planTiles(shape.rows, blocks, shape.depth, shape.inputBytes, wide);
  }
  if (plan && parts > 1)
    plan->threadBlocks = blocks / parts;
  // A panel is one register tile's rows.
  int64_t panel = shape.rowPanel;
  if (!plan || (panel && plan->registerRows != panel &&
                !(plan->registerRows == 0 && shape.rows == panel)))
    return std::nullopt;
  return plan;
}

CpuTilesAttr TilePlan::toAttr(MLIRContext *context) const {
  return CpuTilesAttr::get(context, cacheRows, cacheBlocks, slabRows,
                           registerRows,
                           tileRegisterBlocks ? registerBlocks : 0, kStep,
                           kChunk, threadBlocks);
}

TilePlan TilePlan::fromAttr(CpuTilesAttr tiles) {
  TilePlan plan;
  plan.cacheRows = tiles.getCacheRows();
  plan.cacheBlocks = tiles.getCacheBlocks();
  plan.slabRows = tiles.getSlabRows();
  plan.registerRows = tiles.getRegisterRows();
  plan.tileRegisterBlocks = tiles.getRegisterBlocks() != 0;
  plan.registerBlocks = std::max<int64_t>(tiles.getRegisterBlocks(), 1);
  plan.kStep = tiles.getKStep();
  plan.kChunk = tiles.getKChunk();
  plan.threadBlocks = tiles.getThreadBlocks();
  return plan;
}
