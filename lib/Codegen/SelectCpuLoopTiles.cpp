//===- SelectCpuLoopTiles.cpp - The CPU target's tiles between layers -----===//
//
// Chooses the schedule and tiles of each linalg op between the layers from
// its static shape (the planners of CpuBetweenLayersSchedules.cpp) and
// records them as a #lamina.cpu_loop_tiles, which
// lamina-cpu-tile-and-vectorize applies.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "lamina/Codegen/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Support/VectorBits.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINASELECTCPULOOPTILES
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::cpu;

/// The schedule of `op`, or null where it stays a loop nest.
static CpuLoopTilesAttr chooseTiles(linalg::LinalgOp op, bool wide) {
  MLIRContext *context = op->getContext();
  auto of = [&](LoopSchedule schedule, const Tiles &tiles) {
    return CpuLoopTilesAttr::get(context, schedule, tiles.sizes,
                                 tiles.vectorSizes);
  };
  if (auto transpose = dyn_cast<linalg::TransposeOp>(*op)) {
    if (isRowTranspose(transpose))
      return CpuLoopTilesAttr::get(context, LoopSchedule::row_transpose, {},
                                   {});
    if (std::optional<Tiles> tiles = planTranspose(transpose))
      return of(LoopSchedule::elementwise, *tiles);
    return {};
  }
  // A rotary epilogue's pair partners are scheduled with its matmul.
  if (hasLoweredStage(op, LoweredStage::pair_partners))
    return {};
  if (std::optional<Tiles> tiles = planColumnSum(op))
    return of(LoopSchedule::column_sum, *tiles);
  if (std::optional<SmallVector<int64_t>> sizes =
          planBetweenLayersMatmul(op, wide))
    return CpuLoopTilesAttr::get(context, LoopSchedule::matmul, *sizes, {});
  auto generic = dyn_cast<linalg::GenericOp>(*op);
  // A layer's packed matmul and its epilogue follow the layer's layout.
  if (!generic || getLayerMatmul(generic))
    return {};
  if (std::optional<Tiles> tiles = planElementwise(generic))
    return of(LoopSchedule::elementwise, *tiles);
  if (std::optional<Tiles> lanes = planRowReduction(generic))
    return of(LoopSchedule::row_reduction, *lanes);
  return {};
}

namespace {
struct LaminaSelectCpuLoopTilesPass
    : mlir::lamina::impl::LaminaSelectCpuLoopTilesBase<
          LaminaSelectCpuLoopTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyVectorBits(module, vectorBits)))
      return signalPassFailure();
    module.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(LaminaDialect::kCodegenAttrName))
        return;
      if (CpuLoopTilesAttr tiles = chooseTiles(op, vectorBits == 512))
        op->setAttr(LaminaDialect::kCodegenAttrName, tiles);
    });
  }
};
} // namespace
