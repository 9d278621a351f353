//===- CpuSchedules.h - The CPU schedules, as transform text ---*- C++ -*-===//
//
// lamina-cpu-tile-and-vectorize tags each op it schedules with a number and
// writes one transform-dialect schedule per tag, as text, from the op's
// static shape: the linear layers' packed matmuls with their epilogues
// (CpuLayerMatmulSchedules.cpp), the ops between layers
// (CpuBetweenLayersSchedules.cpp), both made of shared steps
// (CpuScheduleText.cpp). Schedule `index` matches its op as `%t<index>`,
// its function as `%func`.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_CODEGEN_CPUSCHEDULES_H
#define LAMINA_LIB_CODEGEN_CPUSCHEDULES_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>
#include <string>

namespace mlir::lamina::cpu {

/// Marks the op a generated schedule applies to, for its `match`, and the
/// producers a threaded schedule fuses into its parallel loop.
inline constexpr llvm::StringLiteral kTargetAttr = "__lamina_tile_target";
inline constexpr llvm::StringLiteral kMatmulAttr = "__lamina_tile_matmul";
inline constexpr llvm::StringLiteral kFillAttr = "__lamina_tile_fill";

/// Whether `op` reads or writes booleans, which stay scalar: LLVM stores a
/// vector<Nxi1> as packed bits, a memref of i1 holds one byte per element.
bool hasBooleanOperand(Operation *op);

//===----------------------------------------------------------------------===//
// Shared steps
//===----------------------------------------------------------------------===//

/// `sizes` as a transform op's list: "[a, b, ...]".
std::string tileSizes(ArrayRef<int64_t> sizes);

/// The tiles of an op between layers: tile sizes (0: the dim is not
/// tiled) and, where a tile does not divide its extent, the vector sizes of
/// the tiled op (empty where every tile is whole): its last tile along such
/// a dim is partial, vectorized with masks at the full tile's size.
struct Tiles {
  SmallVector<int64_t> sizes;
  SmallVector<int64_t> vectorSizes;
};

/// `sizes` over the static `ranges` (a dim shorter than its tile taken
/// whole), with the vector sizes of the tiled op where a tile leaves a
/// remainder.
Tiles tilesOf(ArrayRef<int64_t> ranges, ArrayRef<int64_t> sizes);

/// `transform.structured.vectorize` of the handle `op` at `vectorSizes`
/// (none: the op's static shape).
std::string vectorizeOp(StringRef op, ArrayRef<int64_t> vectorSizes,
                        bool extracts = false);

/// The result types of a transform op returning `count` handles:
/// "(!transform.any_op, ...)".
std::string handleTypes(size_t count);

/// One schedule step: fuse `target` with its producers into a loop nest
/// over the dims with a non-zero tile size, in the order of `interchange`
/// (a permutation of the target's dims; empty: in their order).
std::string fuseStep(StringRef result, StringRef target,
                     ArrayRef<int64_t> sizes, ArrayRef<int64_t> interchange);

/// Merges the producers that fuse step `result` (tiling `sizes`) fused once
/// per use into one: a matmul whose tile both a rotary epilogue and its pair
/// partners read is computed once.
std::string mergeFusedCopies(StringRef result, ArrayRef<int64_t> sizes);

/// The op schedule `index` applies to, as the handle `%t<index>`.
std::string matchTarget(unsigned index);

/// The ops of role `stage` in `nest` (a handle), as the handle `%<result>`.
std::string matchStage(StringRef result, LoweredStage stage, StringRef nest);

/// Keeps the accumulator of schedule `index`'s k loop (`%kloop<index>`) in
/// registers across it: read before the loop, written after.
std::string hoistAccumulator(unsigned index);

/// Vectorizes every linalg op in `nest` (a handle); the cleanup after the
/// steps folds the vectors into contractions (OpSchedule::contracts).
/// `extracts`: ops of the nest read tensors by index (tensor.extract).
std::string vectorizeNest(unsigned index, StringRef nest,
                          bool extracts = false);

/// The transform script of one op's schedule, in two parts: its steps
/// (tiling, vectorizing), and what runs after the steps of every op and one
/// cleanup of the function (canonicalization, folding slices into vector
/// transfers, forming contractions, CSE): hoisting accumulators out of
/// loops, marks for later passes. One cleanup for all ops: cleaning the
/// whole function up after each op's steps made scheduling quadratic in
/// the number of ops (a 4-layer GPT-2 backward: 2.2 s, 1 layer: 0.3 s).
struct OpSchedule {
  std::string steps;
  std::string afterCleanup;
  /// Whether the cleanup forms contractions of its vectors (a matmul's).
  bool contracts = false;
};

//===----------------------------------------------------------------------===//
// The linear layers' packed matmuls
//===----------------------------------------------------------------------===//

/// Tile sizes of a layer matmul's schedule (CpuTilePlans.cpp), as
/// #lamina.cpu_tiles records them.
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

  CpuTilesAttr toAttr(MLIRContext *context) const;
  static TilePlan fromAttr(CpuTilesAttr tiles);
};

/// What a packed matmul's tiles are planned from: M rows (`rowPanel` per
/// panel, 0: not in panels), N/16 blocks of 16 features, the depth in steps
/// of k (pairs of k count as one, `inputBytes` then being a pair's), and
/// whether a rotary epilogue reads the tile.
struct LayerMatmulShape {
  int64_t rows = 0, blocks = 0, depth = 0, inputBytes = 4, rowPanel = 0;
  bool rotates = false;
};

/// The tiles of a packed matmul of `shape` (its blocks shared out among
/// `threads` threads where they divide evenly; `wide`: 512-bit vectors), or
/// none for a shape that stays a loop nest.
std::optional<TilePlan> planLayerMatmulTiles(const LayerMatmulShape &shape,
                                             bool wide, unsigned threads);

/// A layer's packed matmul and the op its schedule targets: the matmul's
/// epilogue, or the matmul itself when it has none.
struct LayerMatmul {
  linalg::GenericOp matmul;
  bool targetIsMatmul = false;
  /// The epilogue is a rotary embedding: it reads its elements' pair
  /// partners (a generic of their own) and its tables by index.
  bool rotates = false;
};

/// Contractions of a vector with a constant permutation matrix along its
/// last dim (a rotary epilogue's pair partners) → shuffles of its lanes.
void populatePermutationContractionPatterns(RewritePatternSet &patterns);

/// The packed matmul `op` is the schedule target of, on tensors, if any.
std::optional<LayerMatmul> getLayerMatmul(linalg::GenericOp op);

/// The schedule of `target`, applying the #lamina.cpu_tiles of its
/// matmul's layout, or none where the layout has no tiles.
std::optional<OpSchedule> buildLayerMatmulSchedule(unsigned index,
                                                   const LayerMatmul &target);

//===----------------------------------------------------------------------===//
// The ops between layers
//===----------------------------------------------------------------------===//

/// The tile sizes of a matmul between layers (attention's per-head
/// `linalg.batch_matmul`, a plain `linalg.matmul`), if it has a schedule.
std::optional<SmallVector<int64_t>> planBetweenLayersMatmul(linalg::LinalgOp op,
                                                            bool wide);
OpSchedule buildBetweenLayersMatmulSchedule(unsigned index,
                                           ArrayRef<int64_t> sizes);

/// The tiles of an element-wise op, if it is vectorized.
std::optional<Tiles> planElementwise(linalg::GenericOp op);
/// `extracts`: the op gathers with tensor.extract (an embedding).
OpSchedule buildElementwiseSchedule(unsigned index, const Tiles &tiles,
                                    bool extracts = false);
/// Whether `op` reads a tensor at computed indices.
bool hasExtract(Operation *op);

/// The row tiles of a reduction along the last dim, and the lanes each row
/// is split into (with the vector sizes of a partial last lane tile), if it
/// is vectorized.
std::optional<Tiles> planRowReduction(linalg::GenericOp op);
OpSchedule buildRowReductionSchedule(unsigned index, const Tiles &lanes);

/// The tiles of float sums over every dim but the last.
std::optional<Tiles> planColumnSum(linalg::LinalgOp op);
OpSchedule buildColumnSumSchedule(unsigned index, const Tiles &tiles);

/// The tiles of a transpose, if it is vectorized.
std::optional<Tiles> planTranspose(linalg::TransposeOp op);
/// Whether `op` moves whole rows of 16 or 8 (`[a, b, n0] → [b, a, n0]`).
bool isRowTranspose(linalg::TransposeOp op);
OpSchedule buildRowTransposeSchedule(unsigned index);

} // namespace mlir::lamina::cpu

#endif // LAMINA_LIB_CODEGEN_CPUSCHEDULES_H
