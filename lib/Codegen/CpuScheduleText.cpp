//===- CpuScheduleText.cpp - Steps shared by the CPU schedules ------------===//
//
// Text of the transform ops that every schedule of
// lamina-cpu-tile-and-vectorize is made of.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace mlir::lamina::cpu {

/// Whether `op` reads or writes booleans, which stay scalar: LLVM stores a
/// vector<Nxi1> as packed bits, a memref of i1 holds one byte per element.
bool hasBooleanOperand(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), [](Type type) {
    return getElementTypeOrSelf(type).isInteger(1);
  });
}

std::string tileSizes(ArrayRef<int64_t> sizes) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(sizes))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

/// The result types of a transform op returning `count` handles:
/// "(!transform.any_op, ...)".
Tiles tilesOf(ArrayRef<int64_t> ranges, ArrayRef<int64_t> sizes) {
  Tiles tiles;
  // A dim shorter than its tile is one whole tile, of static size.
  for (auto [range, size] : llvm::zip_equal(ranges, sizes))
    tiles.sizes.push_back(std::min(range, size));
  bool partial =
      llvm::any_of(llvm::zip_equal(ranges, tiles.sizes), [](auto pair) {
        auto [range, size] = pair;
        return size != 0 && range % size != 0;
      });
  if (partial)
    for (auto [range, size] : llvm::zip_equal(ranges, tiles.sizes))
      tiles.vectorSizes.push_back(size ? size : range);
  return tiles;
}

std::string vectorizeOp(StringRef op, ArrayRef<int64_t> vectorSizes,
                        bool extracts) {
  std::string sizes =
      vectorSizes.empty() ? "" : " vector_sizes " + tileSizes(vectorSizes);
  return llvm::formatv("  transform.structured.vectorize {0}{1} {2}: "
                       "!transform.any_op\n",
                       op, sizes, extracts ? "{vectorize_nd_extract} " : "")
      .str();
}

std::string handleTypes(size_t count) {
  std::string types = "(";
  for (size_t i = 0; i < count; ++i)
    types += i ? ", !transform.any_op" : "!transform.any_op";
  return types + ")";
}

/// One schedule step: fuse `target` with its producers into a loop nest
/// over the dims with a non-zero tile size, in the order of `interchange`
/// (a permutation of the target's dims; empty: in their order).
std::string fuseStep(StringRef result, StringRef target,
                     ArrayRef<int64_t> sizes, ArrayRef<int64_t> interchange) {
  int64_t loops = llvm::count_if(sizes, [](int64_t s) { return s != 0; });
  std::string types = handleTypes(loops + 1);
  std::string loopResults =
      loops ? llvm::formatv(", %{0}_loops:{1}", result, loops).str() : "";
  return llvm::formatv(
             "  %{0}{1} = transform.structured.fuse %{2} tile_sizes {3}{4}\n"
             "      : (!transform.any_op) -> {5}\n",
             result, loopResults, target, tileSizes(sizes),
             interchange.empty() ? ""
                                 : " interchange " + tileSizes(interchange),
             types)
      .str();
}

std::string mergeFusedCopies(StringRef result, ArrayRef<int64_t> sizes) {
  if (llvm::all_of(sizes, [](int64_t s) { return s == 0; }))
    return "";
  return llvm::formatv("  transform.apply_cse to %{0}_loops#0 : "
                       "!transform.any_op\n",
                       result)
      .str();
}

/// The op schedule `index` applies to, as the handle `%t<index>`.
std::string matchTarget(unsigned index) {
  return llvm::formatv("  %t{0} = transform.structured.match attributes "
                       "{{{1} = {0} : i64} in %root : (!transform.any_op) -> "
                       "!transform.any_op\n",
                       index, kTargetAttr)
      .str();
}

std::string matchStage(StringRef result, LoweredStage stage,
                       StringRef nest) {
  return llvm::formatv("  %{0} = transform.structured.match attributes "
                       "{{{1} = #lamina<stage {2}>} in {3} : "
                       "(!transform.any_op) -> !transform.any_op\n",
                       result, LaminaDialect::kStageAttrName,
                       stringifyLoweredStage(stage), nest)
      .str();
}

/// Keeps the accumulator of schedule `index`'s k loop (`%kloop<index>`) in
/// registers across it: read before the loop, written after.
std::string hoistAccumulator(unsigned index) {
  return llvm::formatv("  transform.loop.hoist_loop_invariant_subsets "
                       "%kloop{0} : !transform.any_op\n",
                       index)
      .str();
}

/// Vectorizes every linalg op in `nest` (a handle).
std::string vectorizeNest(unsigned index, StringRef nest, bool extracts) {
  std::string ops = "%lin" + std::to_string(index);
  return llvm::formatv("  {0} = transform.structured.match "
                       "interface{{LinalgOp} in {1} : (!transform.any_op) -> "
                       "!transform.any_op\n",
                       ops, nest)
             .str() +
         vectorizeOp(ops, {}, extracts);
}

} // namespace mlir::lamina::cpu
