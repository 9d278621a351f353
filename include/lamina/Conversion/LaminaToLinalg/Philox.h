//===- Philox.h - Counter-based random numbers in arith ---------*- C++ -*-===//
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11) emitted as plain arith ops, so that every target draws the same
// numbers for the same (key, counter).
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LAMINATOLINALG_PHILOX_H
#define LAMINA_CONVERSION_LAMINATOLINALG_PHILOX_H

#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::lamina {

/// Ten Philox rounds on four i32 counter words and two i32 key words;
/// returns the four i32 output words.
std::array<Value, 4> buildPhilox4x32(OpBuilder &builder, Location loc,
                                     std::array<Value, 4> counter,
                                     std::array<Value, 2> key);

/// The dropout stream: element `index` (i64, its row-major index in the
/// whole tensor) is kept iff word `index & 3` of Philox with key = `seed`
/// (i64) and counter = (index >> 2, offset, stream) is at least
/// round(p · 2^32): one Philox call draws four consecutive elements.
/// `offset` is the attribute's plus `offsetBase` (i64, or null: none).
/// `stream` (i32) is 0, or 1 + rank under fork_rng. Returns an i1.
Value buildDropoutKeep(OpBuilder &builder, Location loc, Value index,
                       Value seed, uint64_t offset, Value offsetBase,
                       Value stream, double p);

/// The keep decisions (i1) of the four elements 4·group .. 4·group + 3 of
/// the same stream, from one Philox call.
std::array<Value, 4> buildDropoutKeepGroup(OpBuilder &builder, Location loc,
                                           Value group, Value seed,
                                           uint64_t offset, Value offsetBase,
                                           Value stream, double p);

} // namespace mlir::lamina

#endif // LAMINA_CONVERSION_LAMINATOLINALG_PHILOX_H
