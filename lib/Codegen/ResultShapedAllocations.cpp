//===- ResultShapedAllocations.cpp - Results allocated in their own shape -===//
//
// Lets a result computed in a packed shape and returned reshaped be written
// straight into the caller's out-parameter, instead of into an allocation
// of the packed shape that is then copied.
//
//===----------------------------------------------------------------------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINARESULTSHAPEDALLOCATIONS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

/// The use of a `tensor.empty` that `value` was written into, following
/// each write back to its destination; null if `value` has another origin.
static OpOperand *findEmptyDestination(Value value) {
  while (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    OpOperand *destination = nullptr;
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
      destination = dps.getTiedOpOperand(result);
    else if (auto loop = dyn_cast<scf::ForOp>(op))
      destination = &loop.getInitArgsMutable()[result.getResultNumber()];
    else if (auto forall = dyn_cast<scf::ForallOp>(op))
      destination = &forall.getOutputsMutable()[result.getResultNumber()];
    if (!destination)
      return nullptr;
    if (isa_and_nonnull<tensor::EmptyOp>(destination->get().getDefiningOp()))
      return destination;
    value = destination->get();
  }
  return nullptr;
}

/// Rewrites the empty tensor that `reshape`'s source was written into as the
/// inverse reshape of an empty tensor of `reshape`'s result type.
template <typename ReshapeOp, typename InverseOp>
static void allocateInResultShape(ReshapeOp reshape) {
  auto resultType = cast<RankedTensorType>(reshape.getResult().getType());
  auto sourceType = cast<RankedTensorType>(reshape.getSrc().getType());
  if (!resultType.hasStaticShape() || !sourceType.hasStaticShape())
    return;
  OpOperand *use = findEmptyDestination(reshape.getSrc());
  if (!use)
    return;
  auto empty = use->get().getDefiningOp<tensor::EmptyOp>();
  OpBuilder builder(empty);
  Value whole = tensor::EmptyOp::create(builder, empty.getLoc(),
                                        resultType.getShape(),
                                        resultType.getElementType());
  Value view = InverseOp::create(builder, empty.getLoc(), sourceType, whole,
                                 reshape.getReassociationIndices());
  use->set(view);
  if (empty->use_empty())
    empty->erase();
}

namespace {
struct LaminaResultShapedAllocationsPass
    : mlir::lamina::impl::LaminaResultShapedAllocationsBase<
          LaminaResultShapedAllocationsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      for (Value value : ret.getOperands()) {
        if (auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>())
          allocateInResultShape<tensor::CollapseShapeOp,
                                tensor::ExpandShapeOp>(collapse);
        else if (auto expand = value.getDefiningOp<tensor::ExpandShapeOp>())
          allocateInResultShape<tensor::ExpandShapeOp,
                                tensor::CollapseShapeOp>(expand);
      }
    });
  }
};
} // namespace
