//===- DropoutMask.h - Dropout masks drawn before the epilogue -*- C++ -*-===//
//
// A dropout whose rows' length 4 divides draws its mask as i8 before the
// epilogue: one Philox call per group of four consecutive elements, the
// four words interleaved by a vectorizable element-wise op, where the
// epilogue's per-element form makes one call per element.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LAMINATOLINALG_DROPOUTMASK_H
#define LAMINA_CONVERSION_LAMINATOLINALG_DROPOUTMASK_H

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::lamina {

/// What a dropout's mask is drawn from: its attribute, its seed (i64), the
/// base added to its offset (i64, or null), the process of a partitioned
/// program (index, or null) and the dropped value's per-rank type.
struct DropoutDraw {
  DropoutAttr dropout;
  Value seed;
  Value offsetBase;
  Value rank;
  RankedTensorType valueType;
};

/// The index in the whole tensor of local element `local` (i64; with
/// `unit` = 4, of a group of four elements) of the dropped value: itself
/// unless the dropout is sharded on an axis.
Value buildWholeTensorIndex(OpBuilder &b, Location loc, Value local,
                            const DropoutDraw &draw, int64_t unit);

/// Whether an active dropout of `value` can draw its mask in groups of
/// four consecutive elements: a static last dim that 4 divides, and, when
/// sharded, groups that stay whole in the whole tensor.
bool hasGroupedKeepMask(Value value, const DropoutDraw &draw);

/// The mask of `value` (any rank, see hasGroupedKeepMask) as i8 of its
/// shape, its leading dims collapsed into rows of its last dim.
Value buildKeepMaskLike(OpBuilder &b, Location loc, Value value,
                        const DropoutDraw &draw);

/// The mask of a [M, N/B, B] accumulator, drawn over its rows of N and
/// viewed as [M, N/B, B].
Value buildBlockedKeepMask(OpBuilder &b, Location loc, Value acc,
                           const DropoutDraw &draw);

} // namespace mlir::lamina

#endif // LAMINA_CONVERSION_LAMINATOLINALG_DROPOUTMASK_H
