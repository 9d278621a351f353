//===- LaminaLayoutInterface.h - Layout and partition rules -----*- C++ -*-===//
//
// LayoutOpInterface (LaminaLayoutInterface.td) and what its rules may ask of
// the driver that calls them: the layouts found so far (LayoutState), the
// gradients flowing back (GradientLayoutState), the rank's program being
// built (PartitionState).
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_IR_LAMINALAYOUTINTERFACE_H
#define LAMINA_LAMINA_IR_LAMINALAYOUTINTERFACE_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

#include <string>

namespace mlir {
class DialectRegistry;
namespace lamina {

/// A layout, or why a rule gives none (a sentence fragment the driver
/// reports on the op).
class LayoutOrError {
public:
  LayoutOrError(LayoutAttr layout) : layout(layout) {}
  static LayoutOrError error(std::string reason) {
    LayoutOrError result(LayoutAttr{});
    result.reason = std::move(reason);
    return result;
  }
  bool failed() const { return !layout; }
  LayoutAttr get() const { return layout; }
  const std::string &getReason() const { return reason; }

private:
  LayoutAttr layout;
  std::string reason;
};

/// The layouts inference has found so far, on one axis of the device grid:
/// rules are stated per axis, and the drivers run them on each (a value's
/// layout is one per axis). Most rules hold on any axis; collectives act on
/// theirs alone (syncs on `tp`, replica reductions on `dp`) and are the
/// identity on the others.
class LayoutState {
public:
  virtual ~LayoutState() = default;
  /// The layout of `value` on the grid axis being inferred (R where none
  /// was found).
  virtual LayoutAttr getLayout(Value value) = 0;
  /// The grid axis whose layouts are being inferred.
  virtual StringRef getGridAxis() = 0;
};

/// A gradient's layout and, for partial sums, the layer they come from
/// (named in the diagnostic that asks for the missing all-reduce).
struct GradientLayout {
  LayoutAttr layout;
  std::string origin;
};

/// The backward walk: forward layouts, the gradients of results, the
/// gradients being summed for operands.
class GradientLayoutState {
public:
  virtual ~GradientLayoutState() = default;
  /// The grid axis whose layouts are being inferred (as LayoutState's).
  virtual StringRef getGridAxis() = 0;
  /// The forward layout of `value` (R where none was found).
  virtual LayoutAttr getForwardLayout(Value value) = 0;
  /// The gradient of `result`; a null layout when none flows back.
  virtual GradientLayout getGradient(Value result) = 0;
  /// Adds `gradient` to the gradient of `operand`; reports on `op` two
  /// contributions that cannot be summed as they are.
  virtual LogicalResult addGradient(Operation *op, Value operand,
                                    GradientLayout gradient) = 0;
  /// Records the choice the backward makes for an all_gather sync of `op`
  /// written without tensor_parallel_output_grad.
  virtual void deriveSync(Operation *op, SyncAttr resolved) = 0;
  /// The rule of element-wise ops: every float operand of the result's
  /// shape takes the result's gradient; whole operands of other shapes take
  /// it when everything is whole on every rank.
  virtual LogicalResult addElementwiseGradients(Operation *op) = 0;
};

/// One function being rewritten into what one of the world's ranks computes.
class PartitionState {
public:
  virtual ~PartitionState() = default;
  /// The layout of `value`, null when replicated.
  virtual LayoutAttr getLayout(Value value) = 0;
  /// The per-rank type of a value of whole type `type` and layout `layout`.
  virtual RankedTensorType getLocalType(Type type, LayoutAttr layout) = 0;
  virtual int64_t getWorldSize() = 0;
  /// The process's index on the grid.
  virtual Value getRank() = 0;
  /// Whether bwd_post syncs stay (for backward generation) and collectives
  /// record the sync they come from.
  virtual bool keepsBackwardSyncs() = 0;
  virtual OpBuilder &getBuilder() = 0;
  /// Replaces `op`'s only result by `value`, which takes over its layout.
  virtual void replace(Operation *op, Value value) = 0;
  /// A fresh tensor (tensor.empty, or its linalg.fill) like `value` at the
  /// per-rank type `local`, built at the builder's point; failure when
  /// `value` is not one.
  virtual FailureOr<Value> rebuildFresh(Value value,
                                        RankedTensorType local) = 0;
  /// Gives the inits of a destination-style op with sharded results their
  /// per-rank shapes (a fresh tensor.empty, and its fill).
  virtual LogicalResult localizeInits(DestinationStyleOpInterface op) = 0;
  /// The rule of element-wise ops: results take the per-rank shapes of
  /// their layouts, splat constant operands are rebuilt at that shape.
  virtual LogicalResult partitionElementwise(Operation *op) = 0;
  /// Gives `op` this rank's block of each replicated tensor input that
  /// joins values of the sharded layout `layout` (on the same axis): a
  /// broadcast along that axis used only there is built at the block's
  /// shape, anything else sliced (shard.all_slice, no communication).
  virtual void takeLocalBlocks(Operation *op, LayoutAttr layout) = 0;

  /// Where the group starting at `offset` of a grouped axis of `whole`
  /// elements starts in a rank's share: the same group index, in groups of
  /// the rank's block size.
  int64_t getLocalGroupOffset(int64_t offset, int64_t whole,
                              LayoutAttr layout) {
    int64_t groupSize = whole / layout.getGroups();
    return offset / groupSize * (groupSize / getWorldSize());
  }
};

/// Attaches the layout rules of lamina ops and of the upstream ops Lamina
/// programs contain (lib/Dialect/Lamina/Layouts).
void registerLayoutModels(DialectRegistry &registry);

} // namespace lamina
} // namespace mlir

#include "lamina/Lamina/IR/LaminaLayoutInterface.h.inc"

#endif // LAMINA_LAMINA_IR_LAMINALAYOUTINTERFACE_H
