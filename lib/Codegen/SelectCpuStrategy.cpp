//===- SelectCpuStrategy.cpp - The CPU target's layouts of matmuls --------===//
//
// Chooses each layer matmul's #lamina.cpu_matmul from its static shapes,
// element types and the target's vector width; convert-lamina-to-linalg
// follows the choice.
//
//===----------------------------------------------------------------------===//

#include "CpuSchedules.h"

#include "lamina/Codegen/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Support/VectorBits.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINASELECTCPUSTRATEGY
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// Output features per packed weight block: two AVX2 registers of f32.
static constexpr int64_t kWeightBlock = 16;

/// Whether `input` is a 2-D transpose whose static rows `panel` divides.
static bool isTransposeInPanels(Value input, int64_t panel) {
  auto transpose = input.getDefiningOp<linalg::TransposeOp>();
  auto type = cast<RankedTensorType>(input.getType());
  return transpose && transpose.getPermutation() == ArrayRef<int64_t>{1, 0} &&
         type.getRank() == 2 && !type.isDynamicDim(0) &&
         type.getDimSize(0) != 0 && type.getDimSize(0) % panel == 0;
}

/// The tiles of `op`'s packed matmul of `input` by `weight` in `layout`,
/// or null where it stays a loop nest (dynamic rows, shapes no tile fits).
static CpuTilesAttr planTiles(Operation *op, Value input, Value weight,
                              int64_t weightBlock, int64_t rowPanel,
                              int64_t kGroup, bool wide, unsigned threads) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (llvm::any_of(inputType.getShape().drop_back(), ShapedType::isDynamic))
    return {};
  cpu::LayerMatmulShape shape;
  shape.rows = 1;
  for (int64_t size : inputType.getShape().drop_back())
    shape.rows *= size;
  shape.blocks = weightType.getDimSize(0) / weightBlock;
  shape.depth = weightType.getDimSize(1) / kGroup;
  shape.inputBytes =
      inputType.getElementType().getIntOrFloatBitWidth() / 8 * kGroup;
  shape.rowPanel = rowPanel;
  auto fused = dyn_cast<FusedLinearOp>(op);
  shape.rotates = fused && fused.getRopeCos();
  std::optional<cpu::TilePlan> plan =
      cpu::planLayerMatmulTiles(shape, wide, threads);
  return plan ? plan->toAttr(op->getContext()) : CpuTilesAttr();
}

/// The layout of `op`'s matmul of `input` by `weight`, or null where it
/// stays a plain matmul.
static CpuMatmulAttr chooseLayout(Operation *op, Value input, Value weight,
                                  unsigned vectorBits, bool bf16Dots,
                                  unsigned threads) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  auto element = dyn_cast<FloatType>(inputType.getElementType());
  if (!element || !weightType.hasStaticShape() ||
      weightType.getDimSize(0) % kWeightBlock != 0)
    return {};
  MLIRContext *context = op->getContext();
  Type accumulator =
      element.getWidth() < 32 ? Float32Type::get(context) : Type(element);
  int64_t k = weightType.getDimSize(1);
  bool pairs = bf16Dots && element.isBF16() &&
               weightType.getElementType().isBF16() && k >= 4 && k % 2 == 0;
  // The register tile's rows.
  int64_t panel = vectorBits == 512 ? 8 : 4;
  Type result = getElementTypeOrSelf(op->getResult(0).getType());
  bool panels = !hasMatmulEpilogue(op) && !getFusedActivationGrad(op) &&
                result == accumulator && isTransposeInPanels(input, panel);
  int64_t rowPanel = panels ? panel : 0, kGroup = pairs ? 2 : 1;
  return CpuMatmulAttr::get(
      context, kWeightBlock, rowPanel, kGroup, accumulator,
      planTiles(op, input, weight, kWeightBlock, rowPanel, kGroup,
                vectorBits == 512, threads));
}

namespace {
struct LaminaSelectCpuStrategyPass
    : mlir::lamina::impl::LaminaSelectCpuStrategyBase<
          LaminaSelectCpuStrategyPass> {
  using Base::Base;

  void runOnOperation() override {
    Operation *root = getOperation();
    if (failed(verifyVectorBits(root, vectorBits)))
      return signalPassFailure();
    root->walk([&](Operation *op) {
      // A layout written in the input (a test's, a user's) is kept.
      auto [input, weight] = getMatmulOperands(op);
      if (!weight || getCpuMatmul(op))
        return;
      if (CpuMatmulAttr layout =
              chooseLayout(op, input, weight, vectorBits,
                           bf16Dots && vectorBits == 512, threads))
        op->setAttr(LaminaDialect::kCodegenAttrName, layout);
    });
  }
};
} // namespace
