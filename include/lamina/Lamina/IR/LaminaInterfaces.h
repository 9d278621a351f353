//===- LaminaInterfaces.h - What layers have in common ----------*- C++ -*-===//
//
// The layer op interfaces (LaminaInterfaces.td) and the parts they return.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_IR_LAMINAINTERFACES_H
#define LAMINA_LAMINA_IR_LAMINAINTERFACES_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::lamina {

class SyncAttr;
class ActivationKindAttr;
class DropoutAttr;

/// What every x·Wᵀ layer computes, in the spec's order:
/// matmul → [sync] → [bias] → [activation] → [dropout].
struct LinearLayerParts {
  StringAttr path;
  Value input, weight;
  SyncAttr sync;                 // null: no sync point
  Value bias;                    // null: no bias
  ActivationKindAttr activation; // null: no activation
  DropoutAttr dropout;           // null: no dropout
  Value seed;                    // null unless the dropout is active
  Value rank;                    // null unless the program is partitioned
  Value offsetBase;              // null unless a block's (i64, added to the
                                 // dropout's offset)
};

namespace detail {
// Which epilogue slots an op declares in ODS; the interfaces' default
// implementations read exactly those.
template <typename Op>
using SyncSlotGetter = decltype(std::declval<Op &>().getSyncAttr());
template <typename Op>
using ActivationGetter = decltype(std::declval<Op &>().getActivationAttr());
template <typename Op>
using DropoutGetter = decltype(std::declval<Op &>().getDropoutAttr());
template <typename Op>
using SeedGetter = decltype(std::declval<Op &>().getSeed());
template <typename Op>
using RankGetter = decltype(std::declval<Op &>().getRank());
template <typename Op>
using OffsetBaseGetter = decltype(std::declval<Op &>().getOffsetBase());

template <typename Op>
constexpr bool kHasSyncSlot = llvm::is_detected<SyncSlotGetter, Op>::value;
template <typename Op>
constexpr bool kHasActivation = llvm::is_detected<ActivationGetter, Op>::value;
template <typename Op>
constexpr bool kHasDropout = llvm::is_detected<DropoutGetter, Op>::value;
template <typename Op>
constexpr bool kHasSeed = llvm::is_detected<SeedGetter, Op>::value;
template <typename Op>
constexpr bool kHasRank = llvm::is_detected<RankGetter, Op>::value;
template <typename Op>
constexpr bool kHasOffsetBase = llvm::is_detected<OffsetBaseGetter, Op>::value;
} // namespace detail

} // namespace mlir::lamina

#include "lamina/Lamina/IR/LaminaInterfaces.h.inc"

#endif // LAMINA_LAMINA_IR_LAMINAINTERFACES_H
