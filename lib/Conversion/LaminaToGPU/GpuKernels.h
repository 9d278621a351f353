//===- GpuKernels.h - Kernel emitters of convert-lamina-to-gpu --*- C++ -*-===//
//
// Each emitter turns one fused linear layer on device buffers into a
// `gpu.launch` at the builder's insertion point.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_CONVERSION_LAMINATOGPU_GPUKERNELS_H
#define LAMINA_LIB_CONVERSION_LAMINATOGPU_GPUKERNELS_H

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lns/IR/Lns.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::lamina {

/// A linear layer (a fused linear op, or a bare matmul) on 2-D device
/// buffers: output[M, N] = epilogue(input[M, K] · weight[N, K]ᵀ).
struct GpuLinear {
  Operation *op;                 // for diagnostics and the module
  ActivationKindAttr activation; // or null
  DropoutAttr dropout;           // or null
  /// The backward's `activation_grad` of this matmul (dH = (dY·W)·act′(p)):
  /// the product times `derivative`′ at `derivativeInput` (memref<M x N>),
  /// or null.
  ActivationKindAttr derivative;
  Value derivativeInput;
  Value input;                   // memref<M x K>
  Value weight;                  // memref<N x K>
  Value bias;                    // memref<N>, or null
  Value output;                  // memref<M x N>
  Value seed;                    // i64, or null (no active dropout)
  /// M is ShapedType::kDynamic when the leading dims are only known at run
  /// time; `rows` (index, defined on the host) is M either way.
  int64_t m, n, k;
  Value rows;
  // Element types of the layer's tensors (LNS types, whose buffers hold
  // i64 codes); the bias's is null without a bias.
  Type inputElt, weightElt, biasElt;

  bool hasStaticRows() const { return !ShapedType::isDynamic(m); }
  /// ⌈M / blockRows⌉ on the host: a constant when M is static.
  Value rowTiles(OpBuilder &b, Location loc, int64_t blockRows) const;
  /// Whether some tile of `blockRows` rows may stick out of the output.
  bool mayHavePartialRowTile(int64_t blockRows) const {
    return !hasStaticRows() || m % blockRows != 0;
  }
};

/// A gpu.launch over a (gridX, gridY) grid of 1-D blocks of `threads`, with
/// its terminator; the builder moves to the start of its body (callers hold
/// an InsertionGuard).
gpu::LaunchOp createKernelLaunch(OpBuilder &b, Location loc, Value gridX,
                                 Value gridY, int64_t threads,
                                 int64_t sharedBytes = 0);

/// The (row block, column block) of output tile `pid` (index) on a 1-D grid
/// of tilesM × tilesN tiles: column-major within groups of 8 row blocks,
/// groups in order, so that CTAs running together share rows of x and W.
std::pair<Value, Value> buildGroupedTileOrder(OpBuilder &b, Location loc,
                                              Value pid, Value tilesM,
                                              int64_t tilesN);

/// Index arithmetic with constant operands at the builder's insertion point:
/// the kernels' tile, thread and address computations.
class IndexMath {
public:
  IndexMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  Value operator()(int64_t value) const;
  Value add(Value lhs, Value rhs) const;
  Value mul(Value lhs, int64_t rhs) const;
  Value div(Value lhs, int64_t rhs) const;
  Value rem(Value lhs, int64_t rhs) const;
  Value lessThan(Value lhs, int64_t rhs) const;
  Value lessThan(Value lhs, Value rhs) const;
  /// ⌈lhs / rhs⌉ for lhs ≥ 0.
  Value ceilDiv(Value lhs, int64_t rhs) const;

private:
  OpBuilder &b;
  Location loc;
};

/// `value` (a float scalar) as f32: the kernels compute in f32.
Value extendToF32(OpBuilder &b, Location loc, Value value);

/// The kernel's dynamic shared memory as memref<bytes x i8, 3>: a view of
/// the module's external, 1024-byte aligned `lamina_dyn_smem` array (the
/// swizzle pattern's repeat). MLIR 22 lowers `gpu.dynamic_shared_memory` to
/// a 1-byte static array, so it is not used.
Value buildDynamicSharedMemory(OpBuilder &b, Location loc, Operation *anchor,
                               int64_t bytes);

/// Applies the layer's epilogue (bias, activation, dropout) to the f32
/// accumulators `v0`, `v1` of output elements (row, col) and (row, col + 1)
/// and stores both (one vector store); elements outside [M, N] are skipped
/// unless the tile shape makes that impossible (`checkRow`, `checkCol`).
void emitEpiloguePairStore(OpBuilder &b, Location loc, const GpuLinear &layer,
                           Value row, Value col, Value v0, Value v1,
                           bool checkRow, bool checkCol);

/// target[C, R] = source[R, C]ᵀ (R may be dynamic) through 32×32 tiles in
/// shared memory: reads and writes both coalesced.
void emitTranspose(OpBuilder &b, Location loc, Operation *anchor,
                   Value source, Value target);

/// target[N] = Σ_rows source[M, N] (M may be dynamic), accumulated in f32:
/// the bias gradient.
void emitColumnSum(OpBuilder &b, Location loc, Operation *anchor,
                   Value source, Value target);

/// target = body(sources...) element by element over buffers of one shape,
/// computed in f32 (`body` takes and returns f32 scalars).
void emitElementwise(
    OpBuilder &b, Location loc, ValueRange sources, Value target,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// sm_90a: TMA + mbarrier ring, warp-specialised wgmma, register epilogue.
LogicalResult emitWgmmaLinear(OpBuilder &b, Location loc,
                              const GpuLinear &layer);

/// sm_80+: cp.async ring, ldmatrix, mma.sync m16n8k16, register epilogue.
LogicalResult emitMmaSyncLinear(OpBuilder &b, Location loc,
                                const GpuLinear &layer);

/// LNS linear (buffers of i64 codes): one thread per output element,
/// sequential K, additions in `mode`.
LogicalResult emitLnsLinear(OpBuilder &b, Location loc, const GpuLinear &layer,
                            lns::SbdbMode mode);

} // namespace mlir::lamina

#endif // LAMINA_LIB_CONVERSION_LAMINATOGPU_GPUKERNELS_H
