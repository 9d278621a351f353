//===- CpuTileAndVectorize.cpp - Tiling and vectorization of matmuls ------===//
//
// The schedules are transform-dialect scripts, instantiated per op with
// tile sizes chosen from its static shape (CpuSchedules.h), gathered into
// one named sequence per function and applied to that function with the
// transform interpreter.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "lamina/Codegen/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Support/TransformScript.h"
#include "lamina/Support/VectorBits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINACPUTILEANDVECTORIZE
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::cpu;

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

/// Replaces each transpose that moves only dims of size 1 (the backward's
/// dYᵀ of a single output feature, [256, 1] → [1, 256]) by the reshape it
/// is: the elements keep their row-major order. Tiled, such a transpose
/// would transpose vectors with unit dims, which the vector lowering does
/// not end; left whole, a matmul's tile-and-fuse would pull it in and
/// transpose it as one vector.
static void reshapeUnitDimTransposes(ModuleOp module) {
  module.walk([](linalg::TransposeOp op) {
    auto source = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto result = dyn_cast<RankedTensorType>(op.getInit().getType());
    if (!op.hasPureTensorSemantics() || !source || !result ||
        !source.hasStaticShape() || source.getRank() < 2)
      return;
    SmallVector<int64_t> moved;
    for (int64_t dim : op.getPermutation())
      if (source.getDimSize(dim) != 1)
        moved.push_back(dim);
    if (!llvm::is_sorted(moved))
      return;
    OpBuilder builder(op);
    auto all = llvm::to_vector<2>(llvm::seq<int64_t>(0, source.getRank()));
    Value flat = tensor::CollapseShapeOp::create(
        builder, op.getLoc(), op.getInput(),
        ArrayRef<ReassociationIndices>{all});
    auto allResult =
        llvm::to_vector<2>(llvm::seq<int64_t>(0, result.getRank()));
    Value reshaped = tensor::ExpandShapeOp::create(
        builder, op.getLoc(), result, flat,
        ArrayRef<ReassociationIndices>{allResult});
    op->getResult(0).replaceAllUsesWith(reshaped);
    op->erase();
  });
}

/// The schedule script of every op of `function` it applies to, each op
/// tagged with its schedule's number; empty where no op has one.
static std::string buildFunctionSchedule(func::FuncOp function) {
  MLIRContext *context = function.getContext();
  // Every op's steps, then one cleanup, then what follows it.
  std::string steps, afterCleanup;
  bool contracts = false;
  unsigned index = 0;
  auto add = [&](const OpSchedule &schedule) {
    steps += schedule.steps;
    afterCleanup += schedule.afterCleanup;
    contracts |= schedule.contracts;
  };
  // Tags `op` as the target of the next schedule, whose number it is;
  // returns the tag.
  auto markTarget = [&](Operation *op) {
    auto tag = IntegerAttr::get(IntegerType::get(context, 64), index);
    op->setAttr(kTargetAttr, tag);
    return tag;
  };
  // The schedule of an op between layers, from its #lamina.cpu_loop_tiles.
  auto addLoopSchedule = [&](Operation *op, CpuLoopTilesAttr tiles) {
    markTarget(op);
    Tiles sizes{llvm::to_vector(tiles.getTileSizes()),
                llvm::to_vector(tiles.getVectorSizes())};
    switch (tiles.getSchedule()) {
    case LoopSchedule::elementwise:
      return add(buildElementwiseSchedule(index++, sizes, hasExtract(op)));
    case LoopSchedule::row_reduction:
      return add(buildRowReductionSchedule(index++, sizes));
    case LoopSchedule::column_sum:
      return add(buildColumnSumSchedule(index++, sizes));
    case LoopSchedule::row_transpose:
      return add(buildRowTransposeSchedule(index++));
    case LoopSchedule::matmul:
      return add(buildBetweenLayersMatmulSchedule(index++, sizes.sizes));
    }
  };
  // Transposes first, then column sums, the matmuls between layers, and
  // the generics (layers' matmuls, element-wise ops, row reductions) in
  // their order.
  function.walk([&](linalg::TransposeOp op) {
    if (CpuLoopTilesAttr tiles = getCpuLoopTiles(op))
      addLoopSchedule(op, tiles);
  });
  for (LoopSchedule schedule : {LoopSchedule::column_sum,
                                LoopSchedule::matmul})
    function.walk([&](linalg::LinalgOp op) {
      CpuLoopTilesAttr tiles = getCpuLoopTiles(op);
      // Transposes had theirs above, whatever their kind.
      if (tiles && tiles.getSchedule() == schedule &&
          !isa<linalg::TransposeOp>(*op))
        addLoopSchedule(op, tiles);
    });
  function.walk([&](linalg::GenericOp op) {
    if (CpuLoopTilesAttr tiles = getCpuLoopTiles(op)) {
      if (tiles.getSchedule() == LoopSchedule::elementwise ||
          tiles.getSchedule() == LoopSchedule::row_reduction)
        addLoopSchedule(op, tiles);
      return;
    }
    std::optional<LayerMatmul> target = getLayerMatmul(op);
    if (!target)
      return;
    std::optional<OpSchedule> schedule =
        buildLayerMatmulSchedule(index, *target);
    if (!schedule)
      return;
    IntegerAttr tag = markTarget(op);
    target->matmul->setAttr(kMatmulAttr, tag);
    if (Operation *fill = target->matmul.getDpsInits()[0].getDefiningOp())
      fill->setAttr(kFillAttr, tag);
    add(*schedule);
    ++index;
  });
  if (index == 0)
    return "";
  return "module attributes {transform.with_named_sequence} {\n"
         "transform.named_sequence @schedule(%root: !transform.any_op "
         "{transform.readonly}) {\n"
         "  %func = transform.structured.match ops{[\"func.func\"]} in %root "
         ": (!transform.any_op) -> !transform.any_op\n" +
         steps +
         "  transform.apply_patterns to %func {\n"
         "    transform.apply_patterns.canonicalization\n"
         "    transform.apply_patterns.tensor.fold_tensor_subset_ops_into_"
         "vector_transfers\n"
         "  } : !transform.any_op\n" +
         // Element-wise ops between a read's broadcast and a contraction (a
         // half-precision operand's widening) sink below the broadcast, so
         // that the contraction takes the broadcast into its maps and
         // lowers to the FMA tile (bf16 widened: 451 → 29 ms at 512 × 1024
         // × 4096) instead of scalar reductions.
         (contracts ? "  transform.apply_patterns to %func {\n"
                      "    transform.apply_patterns.vector.transfer_"
                      "permutation_patterns\n"
                      "    transform.apply_patterns.vector.sink_ops\n"
                      "    transform.apply_patterns.vector.reduction_to_"
                      "contract\n"
                      "  } : !transform.any_op\n"
                      "  transform.apply_cse to %func : !transform.any_op\n"
                    : "") +
         afterCleanup +
         "  transform.apply_patterns to %func {\n"
         "    transform.apply_patterns.canonicalization\n"
         "  } : !transform.any_op\n"
         "  transform.yield\n}\n}\n";
}

namespace {
/// Schedules each function on its own: its schedules' matches and cleanups
/// walk that function only, so the cost grows with the program's size, not
/// with its size times its number of functions.
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
    reshapeUnitDimTransposes(module);
    for (auto function : module.getOps<func::FuncOp>()) {
      std::string script = buildFunctionSchedule(function);
      if (script.empty())
        continue;
      if (failed(applyTransformScript(function, script, "schedule")))
        return signalPassFailure();
    }
    RewritePatternSet shuffles(&getContext());
    populatePermutationContractionPatterns(shuffles);
    if (failed(applyPatternsGreedily(module, std::move(shuffles))))
      return signalPassFailure();
    module.walk([](Operation *op) {
      for (StringRef name : {kTargetAttr, kMatmulAttr, kFillAttr})
        op->removeAttr(name);
    });
  }
};

} // namespace
