//===- WgmmaKernel.cpp - sm_90a fused linear: TMA, mbarriers, wgmma -------===//
//
// The kernel of one CTA, for an output tile [BM, BN] at (m0, n0):
//
//   warpgroup BM/64 (producer, 40 registers): one thread loops over the K
//     tiles: wait empty[s], expect_tx(full[s]), TMA x[m0:+BM, k:+64] and
//     W[n0:+BN, k:+64] into stage s (128-byte swizzle);
//   warpgroups 0 .. BM/64-1 (consumers, 232 registers), each rows
//     m0 + 64·c:+64: wait full[s], four wgmma m64nBNk16 (one per 16 of K),
//     commit, wait until one group is in flight, arrive empty[s - 1]; then
//     the epilogue on the accumulator registers and the stores.
//
// Both operands are K-major in shared memory (x is [M, K], W is [N, K]), so
// the same descriptor encoding serves both: 128-byte swizzle, 1024 bytes
// between 8-row groups, +32 bytes per 16 elements of K.
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
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::lamina;

namespace {
/// Tile shape and pipeline depth of one kernel.
struct WgmmaConfig {
  int64_t blockM, blockN, stages;

  int64_t consumers() const { return blockM / 64; }
  int64_t threads() const { return (consumers() + 1) * 128; }
  int64_t tileBytesA() const { return blockM * kBlockK * 2; }
  int64_t tileBytesB() const { return blockN * kBlockK * 2; }
  int64_t stageBytes() const { return tileBytesA() + tileBytesB(); }
  int64_t sharedBytes() const { return stages * stageBytes(); }

  /// K per stage: 64 two-byte elements = 128 bytes, the swizzle span.
  static constexpr int64_t kBlockK = 64;
};
} // namespace

/// Few rows: the layer streams the weight, so many narrow CTAs and a deep
/// ring keep enough bytes in flight; otherwise (or with rows known only at
/// run time) the widest tile whose accumulators fit the consumers'
/// registers and that the output fills.
static WgmmaConfig chooseConfig(int64_t m, int64_t n) {
  if (!ShapedType::isDynamic(m) && m <= 64)
    return {64, 64, 8};
  if (n % 256 == 0)
    return {128, 256, 4};
  if (n > 64)
    return {128, 128, 6};
  return {128, 64, 8};
}

/// Registers per thread after `setmaxnreg`: 40 for the producer; the
/// consumers share the rest of the 64 K-register file.
static constexpr int32_t kProducerRegisters = 40;
static constexpr int32_t kConsumerRegisters = 232;

static constexpr unsigned kSharedSpace = 3;

/// wgmma matrix descriptor of a K-major tile at shared address `address`
/// (i64): start >> 4, leading offset 1 (unused with swizzling), stride
/// 1024 B >> 4 between 8-row groups, 128-byte swizzle.
static Value buildMatrixDescriptor(OpBuilder &b, Location loc, Value address) {
  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  };
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, address, i64(0x3FFFF)), i64(4));
  int64_t fixed =
      (int64_t(1) << 16) | (int64_t(1024 >> 4) << 32) | (int64_t(1) << 62);
  return arith::OrIOp::create(b, loc, start, i64(fixed));
}

LogicalResult mlir::lamina::emitWgmmaLinear(OpBuilder &b, Location loc,
                                            const GpuLinear &layer) {
  MLIRContext *ctx = b.getContext();
  WgmmaConfig config = chooseConfig(layer.m, layer.n);
  auto inputType = cast<MemRefType>(layer.input.getType());
  Type elt = inputType.getElementType();
  int64_t kTiles = llvm::divideCeil(layer.k, WgmmaConfig::kBlockK);
  IndexMath ix(b, loc);

  // Host: TMA descriptors (x in [BM, 64] boxes, W in [BN, 64] boxes).
  Attribute sharedSpace = b.getI64IntegerAttr(kSharedSpace);
  auto tileType = [&](int64_t rows) {
    return MemRefType::get({rows, WgmmaConfig::kBlockK}, elt,
                           MemRefLayoutAttrInterface(), sharedSpace);
  };
  auto tensorMapType = [&](int64_t rows) {
    return nvgpu::TensorMapDescriptorType::get(
        ctx, tileType(rows), nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
        nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
        nvgpu::TensorMapOOBKind::OOB_ZERO,
        nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  };
  auto createTensorMap = [&](Value buffer, int64_t rows) -> Value {
    Value unranked = memref::CastOp::create(
        b, loc, UnrankedMemRefType::get(elt, Attribute()), buffer);
    return nvgpu::TmaCreateDescriptorOp::create(
        b, loc, tensorMapType(rows), unranked,
        ValueRange{ix(rows), ix(WgmmaConfig::kBlockK)});
  };
  Value mapX = createTensorMap(layer.input, config.blockM);
  Value mapW = createTensorMap(layer.weight, config.blockN);

  Value tilesM = layer.rowTiles(b, loc, config.blockM);
  int64_t tilesN = llvm::divideCeil(layer.n, config.blockN);
  OpBuilder::InsertionGuard guard(b);
  auto launch = createKernelLaunch(b, loc, ix.mul(tilesM, tilesN), ix(1),
                                   config.threads(), config.sharedBytes());

  auto cmp = [&](arith::CmpIPredicate pred, Value lhs, Value rhs) -> Value {
    return arith::CmpIOp::create(b, loc, pred, lhs, rhs);
  };
  auto parityOf = [&](Value round, bool flip) -> Value {
    Value bit =
        arith::IndexCastUIOp::create(b, loc, b.getI1Type(), ix.rem(round, 2));
    if (!flip)
      return bit;
    Value one = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    return arith::XOrIOp::create(b, loc, bit, one);
  };

  Value tid = launch.getThreadIds().x;
  Value warpgroup = ix.div(tid, 128);
  Value threadInGroup = ix.rem(tid, 128);
  auto [tileM, tileN] =
      buildGroupedTileOrder(b, loc, launch.getBlockIds().x, tilesM, tilesN);
  Value m0 = ix.mul(tileM, config.blockM);
  Value n0 = ix.mul(tileN, config.blockN);

  // Shared memory: the stage ring as typed views of the dynamic array.
  Value shared =
      buildDynamicSharedMemory(b, loc, layer.op, config.sharedBytes());
  auto stageTile = [&](Value stage, bool weight) -> Value {
    Value offset = ix.mul(stage, config.stageBytes());
    if (weight)
      offset = ix.add(offset, ix(config.tileBytesA()));
    return memref::ViewOp::create(
        b, loc, tileType(weight ? config.blockN : config.blockM), shared,
        offset, ValueRange{});
  };

  auto barrierType = nvgpu::MBarrierGroupType::get(
      ctx, gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup),
      config.stages);
  Value full = nvgpu::MBarrierCreateOp::create(b, loc, barrierType);
  Value empty = nvgpu::MBarrierCreateOp::create(b, loc, barrierType);
  Value isFirst = cmp(arith::CmpIPredicate::eq, tid, ix(0));
  auto init = scf::IfOp::create(b, loc, isFirst, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(init.thenBlock());
    for (int64_t s = 0; s < config.stages; ++s) {
      nvgpu::MBarrierInitOp::create(b, loc, full, ix(1), ix(s), Value());
      nvgpu::MBarrierInitOp::create(b, loc, empty, ix(config.consumers() * 128),
                                    ix(s), Value());
    }
    nvgpu::TmaPrefetchOp::create(b, loc, mapX, Value());
    nvgpu::TmaPrefetchOp::create(b, loc, mapW, Value());
  }
  gpu::BarrierOp::create(b, loc);

  Value ticks = ix(10000000);
  Value isProducer =
      cmp(arith::CmpIPredicate::eq, warpgroup, ix(config.consumers()));
  auto roles = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);

  // Producer: one thread issues every TMA load.
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(roles.thenBlock());
    NVVM::SetMaxRegisterOp::create(b, loc, kProducerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
    Value leader = cmp(arith::CmpIPredicate::eq, threadInGroup, ix(0));
    auto leaderIf = scf::IfOp::create(b, loc, leader, false);
    b.setInsertionPointToStart(leaderIf.thenBlock());
    auto loop = scf::ForOp::create(b, loc, ix(0), ix(kTiles), ix(1));
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    Value stage = ix.rem(k, config.stages);
    Value round = ix.div(k, config.stages);
    // A fresh barrier has completed the phase of parity 1: the first round
    // of each stage does not wait.
    nvgpu::MBarrierTryWaitParityOp::create(b, loc, empty, parityOf(round, true),
                                           ticks, stage);
    nvgpu::MBarrierArriveExpectTxOp::create(
        b, loc, full, ix(config.stageBytes()), stage, Value());
    Value kOffset = ix.mul(k, WgmmaConfig::kBlockK);
    nvgpu::TmaAsyncLoadOp::create(b, loc, stageTile(stage, false), full, mapX,
                                  ValueRange{kOffset, m0}, stage, Value(),
                                  Value());
    nvgpu::TmaAsyncLoadOp::create(b, loc, stageTile(stage, true), full, mapW,
                                  ValueRange{kOffset, n0}, stage, Value(),
                                  Value());
  }

  // Consumers: wgmma on the ring, epilogue from the registers.
  b.setInsertionPointToStart(roles.elseBlock());
  NVVM::SetMaxRegisterOp::create(b, loc, kConsumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  Type f32 = b.getF32Type();
  int64_t accumulators = config.blockN / 2;
  auto accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(accumulators, f32));

  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  };
  Value sharedBase = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shared));
  Value rowsOffset = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(), ix.mul(warpgroup, 64 * WgmmaConfig::kBlockK * 2));
  auto wgmmaType =
      isa<BFloat16Type>(elt) ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;

  // One K tile: wait for its stage, four wgmma (the very first one ignores
  // the accumulators: no instruction but wgmma defines them, which keeps
  // ptxas from serialising the pipeline), commit, let one group stay in
  // flight and hand the previous stage back.
  auto consumeTile = [&](Value k, Value acc, bool first) -> Value {
    Value stage = ix.rem(k, config.stages);
    nvgpu::MBarrierTryWaitParityOp::create(
        b, loc, full, parityOf(ix.div(k, config.stages), false), ticks, stage);
    Value stageBase = arith::AddIOp::create(
        b, loc, sharedBase,
        arith::IndexCastUIOp::create(b, loc, b.getI64Type(),
                                     ix.mul(stage, config.stageBytes())));
    Value descA = buildMatrixDescriptor(
        b, loc, arith::AddIOp::create(b, loc, stageBase, rowsOffset));
    Value descB = buildMatrixDescriptor(
        b, loc,
        arith::AddIOp::create(b, loc, stageBase, i64(config.tileBytesA())));
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    for (int64_t kk = 0; kk < WgmmaConfig::kBlockK / 16; ++kk) {
      // 16 elements of K = 32 bytes = 2 descriptor units.
      Value a = arith::AddIOp::create(b, loc, descA, i64(2 * kk));
      Value w = arith::AddIOp::create(b, loc, descB, i64(2 * kk));
      auto scaleD = first && kk == 0 ? NVVM::WGMMAScaleOut::zero
                                     : NVVM::WGMMAScaleOut::one;
      acc = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accType, acc, a, w,
          NVVM::MMAShapeAttr::get(ctx, 64, config.blockN, 16),
          NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
          NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
          NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
          NVVM::WGMMAScaleOutAttr::get(ctx, scaleD),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
          NVVM::MMAIntOverflowAttr());
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
    if (!first) {
      Value previous = ix.rem(ix.add(k, ix(config.stages - 1)), config.stages);
      nvgpu::MBarrierArriveOp::create(
          b, loc, nvgpu::MBarrierTokenType::get(ctx), empty, previous);
    }
    return acc;
  };

  Value acc = consumeTile(ix(0), LLVM::PoisonOp::create(b, loc, accType),
                          /*first=*/true);
  auto loop =
      scf::ForOp::create(b, loc, ix(1), ix(kTiles), ix(1), ValueRange{acc});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, loc,
        consumeTile(loop.getInductionVar(), loop.getRegionIterArg(0), false));
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  acc = loop.getResult(0);

  // Accumulator register (4j + 2h + e) of thread (warp, lane) holds row
  // 16·warp + lane/4 + 8h and column 8j + 2·(lane % 4) + e of the m64 tile.
  Value warp = ix.div(threadInGroup, 32);
  Value lane = ix.rem(threadInGroup, 32);
  Value rowBase = ix.add(ix.add(m0, ix.mul(warpgroup, 64)),
                         ix.add(ix.mul(warp, 16), ix.div(lane, 4)));
  Value colBase = ix.add(n0, ix.mul(ix.rem(lane, 4), 2));
  bool checkRow = layer.mayHavePartialRowTile(config.blockM);
  bool checkCol = layer.n % config.blockN != 0;
  for (int64_t h = 0; h < 2; ++h) {
    Value row = ix.add(rowBase, ix(8 * h));
    for (int64_t j = 0; j < config.blockN / 8; ++j) {
      Value col = ix.add(colBase, ix(8 * j));
      Value v0 = LLVM::ExtractValueOp::create(b, loc, acc, 4 * j + 2 * h);
      Value v1 = LLVM::ExtractValueOp::create(b, loc, acc, 4 * j + 2 * h + 1);
      emitEpiloguePairStore(b, loc, layer, row, col, v0, v1, checkRow,
                            checkCol);
    }
  }
  return success();
}
