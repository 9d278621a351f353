//===- CodegenAttrs.cpp - Code-generation choices on lamina ops -----------===//
//
// The layouts a target's strategy chooses for a layer's matmul, and the
// checks that they fit the op they are on.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::lamina;

LogicalResult
CpuTilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     int64_t cacheRows, int64_t cacheBlocks, int64_t slabRows,
                     int64_t registerRows, int64_t registerBlocks,
                     int64_t kStep, int64_t kChunk, int64_t threadBlocks) {
  for (int64_t size : {cacheRows, cacheBlocks, slabRows, registerRows,
                       registerBlocks, kStep, kChunk, threadBlocks})
    if (size < 0)
      return emitError() << "tile sizes are 0 (not tiled) or positive, got "
                         << size;
  if ((cacheRows == 0) != (cacheBlocks == 0))
    return emitError() << "a cache tile has rows and blocks, got "
                       << cacheRows << " × " << cacheBlocks;
  if (kChunk % std::max<int64_t>(kStep, 1) != 0 || (kChunk && !kStep))
    return emitError() << "k_chunk " << kChunk
                       << " must be a multiple of k_step " << kStep;
  return success();
}

LogicalResult
CpuLoopTilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         LoopSchedule schedule, ArrayRef<int64_t> tileSizes,
                         ArrayRef<int64_t> vectorSizes) {
  if (llvm::any_of(tileSizes, [](int64_t size) { return size < 0; }))
    return emitError() << "tile sizes are 0 (not tiled) or positive";
  if (!vectorSizes.empty() && vectorSizes.size() != tileSizes.size())
    return emitError() << "vector_sizes give one size per tiled dim: "
                       << vectorSizes.size() << " for " << tileSizes.size()
                       << " dims";
  bool sized = schedule != LoopSchedule::row_transpose;
  if (sized == tileSizes.empty())
    return emitError() << "a " << stringifyLoopSchedule(schedule)
                       << " schedule "
                       << (sized ? "needs tile sizes" : "takes no tiles");
  return success();
}

LogicalResult
CpuMatmulAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t weightBlock, int64_t rowPanel, int64_t kGroup,
                      Type accumulator, CpuTilesAttr tiles) {
  if (weightBlock < 1)
    return emitError() << "weight_block must be positive, got "
                       << weightBlock;
  if (rowPanel < 0)
    return emitError() << "row_panel must be 0 (none) or positive, got "
                       << rowPanel;
  if (kGroup != 1 && kGroup != 2)
    return emitError() << "k_group must be 1 or 2, got " << kGroup;
  if (!isa<FloatType>(accumulator))
    return emitError() << "accumulator must be a float type, got "
                       << accumulator;
  return success();
}

std::pair<Value, Value> mlir::lamina::getMatmulOperands(Operation *op) {
  if (auto layer = dyn_cast<LinearLayerOpInterface>(op))
    return {layer.getLayerInput(), layer.getLayerWeight()};
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return {matmul.getInput(), matmul.getWeight()};
  if (auto qkv = dyn_cast<FusedQKVOp>(op))
    return {qkv.getInput(), qkv.getWeight()};
  return {};
}

bool mlir::lamina::hasMatmulEpilogue(Operation *op) {
  if (auto qkv = dyn_cast<FusedQKVOp>(op))
    return bool(qkv.getBias());
  auto layer = dyn_cast<LinearLayerOpInterface>(op);
  if (!layer)
    return false;
  auto fused = dyn_cast<FusedLinearOp>(op);
  DropoutAttr dropout = layer.getLayerDropout();
  return layer.getLayerBias() || layer.getLayerActivation() ||
         (dropout && dropout.isActive()) || (fused && fused.getRopeCos());
}

ActivationGradOp mlir::lamina::getFusedActivationGrad(Operation *matmul) {
  if (!isa<MatmulOp>(matmul) || !matmul->hasOneUse())
    return {};
  auto grad = dyn_cast<ActivationGradOp>(*matmul->user_begin());
  Value product = matmul->getResult(0);
  if (!grad || grad.getCotangent() != product ||
      grad.getType() != product.getType())
    return {};
  return grad;
}

CpuLoopTilesAttr mlir::lamina::getCpuLoopTiles(Operation *op) {
  return op->getAttrOfType<CpuLoopTilesAttr>(LaminaDialect::kCodegenAttrName);
}

CpuMatmulAttr mlir::lamina::getCpuMatmul(Operation *op) {
  return op->getAttrOfType<CpuMatmulAttr>(LaminaDialect::kCodegenAttrName);
}

LogicalResult mlir::lamina::verifyCpuMatmul(Operation *op,
                                            CpuMatmulAttr config) {
  // The lowered matmul keeps its layout for the schedules.
  if (hasLoweredStage(op, LoweredStage::matmul))
    return success();
  auto [input, weight] = getMatmulOperands(op);
  if (!weight)
    return op->emitError() << "'" << LaminaDialect::kCodegenAttrName
                           << "' lays out the matmul of a linear layer, "
                              "lamina.matmul or lamina.fused_qkv";
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = inputType.getElementType();
  if (!isa<FloatType>(element))
    return op->emitError() << "'" << LaminaDialect::kCodegenAttrName
                           << "' lays out float matmuls, not " << element;
  int64_t block = config.getWeightBlock();
  if (!weightType.hasStaticShape() || weightType.getDimSize(0) % block != 0)
    return op->emitError() << "weight_block " << block
                           << " does not divide the static output features "
                              "of the weight "
                           << weightType;
  if (config.getKGroup() == 2) {
    int64_t k = weightType.getDimSize(1);
    if (!element.isBF16() || !weightType.getElementType().isBF16() || k < 4 ||
        k % 2 != 0)
      return op->emitError() << "k_group 2 packs pairs of k of bf16 operands "
                                "with an even depth of at least 4, got "
                             << inputType << " and " << weightType;
  }
  // Epilogues compute in f32.
  Type accumulator = config.getAccumulator();
  if (accumulator != element && !accumulator.isF32())
    return op->emitError() << "accumulator " << accumulator
                           << " must be f32 or the operands' " << element;
  int64_t panel = config.getRowPanel();
  if (panel == 0)
    return success();
  // Panels are packed from the transposed input of a matmul that writes its
  // accumulator as the result.
  Type resultElement = getElementTypeOrSelf(op->getResult(0).getType());
  if (hasMatmulEpilogue(op) || resultElement != accumulator)
    return op->emitError() << "row_panel " << panel
                           << " needs a matmul without epilogue whose "
                              "result is its "
                           << accumulator << " accumulator";
  if (inputType.getRank() != 2 || inputType.isDynamicDim(0) ||
      inputType.getDimSize(0) % panel != 0)
    return op->emitError() << "row_panel " << panel
                           << " does not divide the static rows of the "
                              "2-D input "
                           << inputType;
  return success();
}

void mlir::lamina::setLoweredStage(Operation *op, LoweredStage stage) {
  op->setAttr(LaminaDialect::kStageAttrName,
              LoweredStageAttr::get(op->getContext(), stage));
}

bool mlir::lamina::hasLoweredStage(Operation *op, LoweredStage stage) {
  auto attr = op ? op->getAttrOfType<LoweredStageAttr>(
                       LaminaDialect::kStageAttrName)
                 : LoweredStageAttr();
  return attr && attr.getValue() == stage;
}
