//===- LaminaModelOps.cpp - Verifiers of embedding, masks and losses ------===//
//
// The ops whole models add to the linear layers: lamina.embedding,
// lamina.masked_fill, lamina.cross_entropy and their gradients.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/IR/Lamina.h"

using namespace mlir;
using namespace mlir::lamina;

/// `indices` shape + [C] == `rows` shape, for a weight or its gradient
/// `[V, C]`.
static LogicalResult verifyEmbeddingShapes(Operation *op,
                                           RankedTensorType indices,
                                           RankedTensorType table,
                                           RankedTensorType rows,
                                           StringRef rowsName) {
  if (table.getRank() != 2 || !table.hasStaticShape())
    return op->emitOpError("takes a static [vocabulary, features] weight, "
                           "got ")
           << table;
  SmallVector<int64_t> expected(indices.getShape());
  expected.push_back(table.getDimSize(1));
  if (rows.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << rowsName << " must have the indices' shape followed by the "
           << table.getDimSize(1) << " features, [" << expected << "], got "
           << rows;
  return success();
}

static LogicalResult verifyPaddingIndex(Operation *op,
                                        std::optional<int64_t> padding,
                                        int64_t vocabulary) {
  if (padding && (*padding < 0 || *padding >= vocabulary))
    return op->emitOpError("padding_idx ")
           << *padding << " is outside the " << vocabulary << " rows";
  return success();
}

/// A vocabulary-parallel op (an embedding, a loss) names its shards and its
/// rank together.
static LogicalResult verifyShards(Operation *op, std::optional<uint64_t> shards,
                                  Value rank) {
  if (shards.has_value() != static_cast<bool>(rank))
    return op->emitOpError("takes its rank exactly when it is split into "
                           "shards (vocabulary parallel)");
  return success();
}

LogicalResult EmbeddingOp::verify() {
  auto table = cast<RankedTensorType>(getWeight().getType());
  if (failed(verifyEmbeddingShapes(*this, getInput().getType(), table,
                                   getType(), "the result")) ||
      failed(verifyShards(*this, getShards(), getRank())))
    return failure();
  return verifyPaddingIndex(*this, getPaddingIdx(),
                            table.getDimSize(0) * getShards().value_or(1));
}

LogicalResult EmbeddingGradOp::verify() {
  auto table = cast<RankedTensorType>(getType());
  if (failed(verifyEmbeddingShapes(*this, getInput().getType(), table,
                                   getCotangent().getType(),
                                   "the cotangent")) ||
      failed(verifyShards(*this, getShards(), getRank())))
    return failure();
  return verifyPaddingIndex(*this, getPaddingIdx(),
                            table.getDimSize(0) * getShards().value_or(1));
}

LogicalResult MaskedFillOp::verify() {
  ArrayRef<int64_t> input = getInput().getType().getShape();
  ArrayRef<int64_t> mask = getMask().getType().getShape();
  if (input.size() != mask.size())
    return emitOpError("takes a mask of the input's rank ")
           << input.size() << ", got rank " << mask.size();
  for (auto [dim, sizes] : llvm::enumerate(llvm::zip_equal(input, mask))) {
    auto [inputSize, maskSize] = sizes;
    if (maskSize != 1 && maskSize != inputSize)
      return emitOpError("mask dim ")
             << dim << " is " << maskSize << ": it must be 1 (broadcast) or "
             << "the input's " << inputSize;
  }
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType input = getInput().getType();
  ArrayRef<int64_t> tables = getCos().getType().getShape();
  if (input.getElementType() != getCos().getType().getElementType())
    return emitOpError("takes tables of the input's element type ")
           << input.getElementType() << ", got "
           << getCos().getType().getElementType();
  if (input.getRank() == 0 || tables.size() != size_t(input.getRank()))
    return emitOpError("takes tables of the input's rank ")
           << input.getRank() << " (at least 1), got rank " << tables.size();
  int64_t width = input.getShape().back();
  if (ShapedType::isDynamic(width) || width % 2 != 0)
    return emitOpError("rotates pairs of the last dim: its size must be "
                       "static and even, got ")
           << input;
  if (tables.back() != width / 2)
    return emitOpError("takes one angle per pair: the tables' last dim must "
                       "be ")
           << width / 2 << ", got " << tables.back();
  for (int64_t dim = 0; dim + 1 < input.getRank(); ++dim)
    if (tables[dim] != 1 && tables[dim] != input.getDimSize(dim))
      return emitOpError("tables dim ")
             << dim << " is " << tables[dim]
             << ": it must be 1 (broadcast) or the input's "
             << input.getDimSize(dim);
  return success();
}

/// Logits `[N, V]` and targets `[N]`.
static LogicalResult verifyClassificationShapes(Operation *op,
                                                RankedTensorType logits,
                                                RankedTensorType targets) {
  if (logits.getRank() != 2 || !logits.hasStaticShape())
    return op->emitOpError("takes static logits [N, classes], got ") << logits;
  if (targets.getRank() != 1 || targets.getDimSize(0) != logits.getDimSize(0))
    return op->emitOpError("takes one target per row of the logits, ")
           << "tensor<" << logits.getDimSize(0) << "xi64>, got " << targets;
  return success();
}

/// The loss's type for its reduction: one per row for `none`, else 0-d.
static LogicalResult verifyReducedType(Operation *op, RankedTensorType logits,
                                       Type type, bool sum, bool none,
                                       StringRef what) {
  if (sum && none)
    return op->emitOpError("takes one reduction: sum or none");
  auto expected = none ? RankedTensorType::get({logits.getDimSize(0)},
                                               logits.getElementType())
                       : RankedTensorType::get({}, logits.getElementType());
  if (type != expected)
    return op->emitOpError() << what << " must be " << expected << " ("
                             << (none ? "one loss per row" : "the reduced loss")
                             << "), got " << type;
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyClassificationShapes(*this, getLogits().getType(),
                                        getTargets().getType())) ||
      failed(verifyShards(*this, getShards(), getRank())))
    return failure();
  return verifyReducedType(*this, getLogits().getType(), getType(), getSum(),
                           getNone(), "result");
}

LogicalResult CrossEntropyGradOp::verify() {
  if (getType() != getLogits().getType())
    return emitOpError("result must have the logits' type ")
           << getLogits().getType() << ", got " << getType();
  if (failed(verifyClassificationShapes(*this, getLogits().getType(),
                                        getTargets().getType())) ||
      failed(verifyShards(*this, getShards(), getRank())))
    return failure();
  return verifyReducedType(*this, getLogits().getType(),
                           getCotangent().getType(), getSum(), getNone(),
                           "the cotangent");
}
