//===- MmaSyncKernel.cpp - sm_80+ fused linear: cp.async, mma.sync -------===//
//
// One CTA of four warps computes a 128×128 output tile; warp (wm, wn) owns
// rows 64·wm:+64 and columns 64·wn:+64 as 4×8 tiles of m16n8 accumulators.
// x[128, 32] and W[128, 32] tiles (rows padded to 40 elements so that the
// eight 16-byte rows of an ldmatrix hit distinct banks) stream through a
// ring of `kStages` shared-memory buffers by cp.async, one commit group per
// K tile; each K tile is two k16 steps of ldmatrix.x4 fragments and
// `mma.sync.m16n8k16.row.col` with f32 accumulators (nvvm directly:
// nvgpu.mma.sync has no bf16 lowering).
//
//===----------------------------------------------------------------------===//

#include "GpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::lamina;

static constexpr int64_t kBlock = 128;   // rows and columns per CTA
static constexpr int64_t kBlockK = 32;   // K per stage
static constexpr int64_t kRowPitch = 40; // padded smem row, elements
static constexpr int64_t kStages = 3;
static constexpr int64_t kThreads = 128; // four warps
static constexpr int64_t kWarpTile = 64;
static constexpr int64_t kChunk = 8; // elements per 16-byte cp.async
static constexpr int64_t kTileBytes = kBlock * kRowPitch * 2;

LogicalResult mlir::lamina::emitMmaSyncLinear(OpBuilder &b, Location loc,
                                              const GpuLinear &layer) {
  MLIRContext *ctx = b.getContext();
  Type elt = cast<MemRefType>(layer.input.getType()).getElementType();
  int64_t kTiles = llvm::divideCeil(layer.k, kBlockK);
  IndexMath ix(b, loc);
  auto ringType =
      MemRefType::get({kStages * 2 * kBlock, kRowPitch}, elt,
                      MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
  int64_t ringBytes = kStages * 2 * kTileBytes;
  OpBuilder::InsertionGuard guard(b);
  Value tilesM = layer.rowTiles(b, loc, kBlock);
  int64_t tilesN = llvm::divideCeil(layer.n, kBlock);
  auto launch = createKernelLaunch(b, loc, ix.mul(tilesM, tilesN), ix(1),
                                   kThreads, ringBytes);

  Value ring = memref::ViewOp::create(
      b, loc, ringType, buildDynamicSharedMemory(b, loc, layer.op, ringBytes),
      ix(0), ValueRange());
  Value tid = launch.getThreadIds().x;
  auto [tileM, tileN] =
      buildGroupedTileOrder(b, loc, launch.getBlockIds().x, tilesM, tilesN);
  Value m0 = ix.mul(tileM, kBlock);
  Value n0 = ix.mul(tileN, kBlock);
  Value warp = ix.div(tid, 32);
  Value lane = ix.rem(tid, 32);

  // Copies of K tile `k` into stage `stage`: each thread moves 4 chunks of
  // x and 4 of W. Rows past M or N and chunks past K are zero-filled (src
  // size 0) from a clamped, in-bounds address.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto issueCopies = [&](Value k, Value stage) -> Value {
    SmallVector<Value> tokens;
    for (int64_t operand = 0; operand < 2; ++operand) {
      Value source = operand == 0 ? layer.input : layer.weight;
      Value origin = operand == 0 ? m0 : n0;
      Value rows = operand == 0 ? layer.rows : ix(layer.n);
      for (int64_t c = 0; c < kBlock * kBlockK / kChunk / kThreads; ++c) {
        Value chunk = ix.add(tid, ix(c * kThreads));
        Value row = ix.div(chunk, kBlockK / kChunk);
        Value col = ix.mul(ix.rem(chunk, kBlockK / kChunk), kChunk);
        Value globalRow = ix.add(origin, row);
        Value globalCol = ix.add(ix.mul(k, kBlockK), col);
        Value valid =
            arith::AndIOp::create(b, loc, ix.lessThan(globalRow, rows),
                                  ix.lessThan(globalCol, layer.k));
        Value elements =
            arith::SelectOp::create(b, loc, valid, ix(kChunk), ix(0));
        Value lastRow = arith::SubIOp::create(b, loc, rows, ix(1));
        Value safeRow = arith::MinUIOp::create(b, loc, globalRow, lastRow);
        Value safeCol =
            arith::MinUIOp::create(b, loc, globalCol, ix(layer.k - kChunk));
        Value ringRow =
            ix.add(ix.mul(ix.add(ix.mul(stage, 2), ix(operand)), kBlock), row);
        tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
            b, loc, tokenType, ring, ValueRange{ringRow, col}, source,
            ValueRange{safeRow, safeCol}, b.getIndexAttr(kChunk), elements,
            b.getUnitAttr()));
      }
    }
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType, tokens);
  };

  // Prologue: K tiles 0 .. kStages − 2 in flight.
  for (int64_t s = 0; s + 1 < kStages; ++s)
    issueCopies(ix(s), ix(s));

  // 32 accumulators of m16n8 (vector<2x2xf32>: rows r and r + 8).
  Type f32 = b.getF32Type();
  auto accType = VectorType::get({2, 2}, f32);
  constexpr int64_t kTilesM = kWarpTile / 16, kTilesN = kWarpTile / 8;
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
  SmallVector<Value> inits(kTilesM * kTilesN, zero);
  Value warpRow = ix.mul(ix.div(warp, 2), kWarpTile);
  Value warpCol = ix.mul(ix.rem(warp, 2), kWarpTile);
  auto mmaType =
      isa<BFloat16Type>(elt) ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  auto resultStruct =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, f32));

  auto loop = scf::ForOp::create(b, loc, ix(0), ix(kTiles), ix(1), inits);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    // Everyone is done with stage k − 1 before it is refilled with K tile
    // k + kStages − 1; then wait until tile k has landed.
    gpu::BarrierOp::create(b, loc);
    Value next = ix.add(k, ix(kStages - 1));
    Value group = issueCopies(next, ix.rem(next, kStages));
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(kStages - 1));
    gpu::BarrierOp::create(b, loc);

    Value stage = ix.rem(k, kStages);
    Value xBase = ix.mul(stage, 2 * kBlock);
    Value wBase = ix.add(xBase, ix(kBlock));
    SmallVector<Value> acc(loop.getRegionIterArgs());
    auto fragment = [&](Value row, Value col) -> SmallVector<Value> {
      auto fragType = VectorType::get({4, 2}, elt);
      Value loaded = nvgpu::LdMatrixOp::create(b, loc, fragType, ring,
                                               ValueRange{row, col}, false, 4);
      // NVVM takes f16 pairs as vector<2xf16> and bf16 pairs as i32.
      SmallVector<Value> regs;
      for (int64_t i = 0; i < 4; ++i) {
        Value pair =
            vector::ExtractOp::create(b, loc, loaded, ArrayRef<int64_t>{i});
        if (isa<BFloat16Type>(elt))
          pair = vector::ExtractOp::create(
              b, loc,
              vector::BitCastOp::create(
                  b, loc, VectorType::get({1}, b.getI32Type()), pair),
              ArrayRef<int64_t>{0});
        regs.push_back(pair);
      }
      return regs;
    };
    for (int64_t kk = 0; kk < kBlockK; kk += 16) {
      // A (m16k16): lane l addresses row l % 16, columns kk + 8·(l / 16).
      SmallVector<SmallVector<Value>> a;
      for (int64_t i = 0; i < kTilesM; ++i)
        a.push_back(fragment(ix.add(ix.add(xBase, warpRow),
                                    ix.add(ix(16 * i), ix.rem(lane, 16))),
                             ix.add(ix(kk), ix.mul(ix.div(lane, 16), 8))));
      // B for two n8 tiles: lane l addresses row 8·(l / 16) + l % 8,
      // columns kk + 8·((l / 8) % 2).
      SmallVector<SmallVector<Value>> w;
      for (int64_t j = 0; j < kTilesN; j += 2) {
        SmallVector<Value> regs = fragment(
            ix.add(ix.add(wBase, warpCol),
                   ix.add(ix(8 * j), ix.add(ix.mul(ix.div(lane, 16), 8),
                                            ix.rem(lane, 8)))),
            ix.add(ix(kk), ix.mul(ix.rem(ix.div(lane, 8), 2), 8)));
        w.push_back({regs[0], regs[1]});
        w.push_back({regs[2], regs[3]});
      }
      for (int64_t i = 0; i < kTilesM; ++i)
        for (int64_t j = 0; j < kTilesN; ++j) {
          Value &c = acc[i * kTilesN + j];
          SmallVector<Value> cIn;
          for (int64_t r = 0; r < 2; ++r)
            for (int64_t e = 0; e < 2; ++e)
              cIn.push_back(vector::ExtractOp::create(b, loc, c,
                                                      ArrayRef<int64_t>{r, e}));
          Value d = NVVM::MmaOp::create(
              b, loc, resultStruct, a[i], w[j], cIn, {16, 8, 16}, std::nullopt,
              std::nullopt, std::array<NVVM::MMATypes, 2>{mmaType, mmaType},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          SmallVector<Value> dOut;
          for (int64_t r = 0; r < 4; ++r)
            dOut.push_back(LLVM::ExtractValueOp::create(b, loc, d, r));
          c = vector::FromElementsOp::create(b, loc, accType, dOut);
        }
    }
    scf::YieldOp::create(b, loc, acc);
  }

  // Accumulator (i, j) of lane l: rows 16i + l/4 (+8), columns
  // 8j + 2·(l % 4) (+1) of the warp's tile.
  Value rowBase = ix.add(ix.add(m0, warpRow), ix.div(lane, 4));
  Value colBase = ix.add(ix.add(n0, warpCol), ix.mul(ix.rem(lane, 4), 2));
  bool checkRow = layer.mayHavePartialRowTile(kBlock);
  bool checkCol = layer.n % kBlock != 0;
  for (int64_t i = 0; i < kTilesM; ++i)
    for (int64_t j = 0; j < kTilesN; ++j) {
      Value c = loop.getResult(i * kTilesN + j);
      for (int64_t h = 0; h < 2; ++h) {
        Value v0 =
            vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{h, 0});
        Value v1 =
            vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{h, 1});
        emitEpiloguePairStore(
            b, loc, layer, ix.add(rowBase, ix(16 * i + 8 * h)),
            ix.add(colBase, ix(8 * j)), v0, v1, checkRow, checkCol);
      }
    }
  return success();
}
