//===- LnsKernel.cpp - LNS linear layers as per-element GPU kernels -------===//
//
// One thread per output element runs the spec's sequential sum
// acc = add(acc, mul(x[m, k], W[n, k])) for k = 0 .. K−1, then adds the bias
// once, on i64 codes through the CPU path's CodeBuilder. `ideal` additions go
// through the certified fast path; an addition whose error bound cannot
// decide the rounding is recomputed with the exact double formula (libdevice
// pow and log) before the sum goes on, so every partial sum is the exact
// one. `table` mode reads the precomputed sbdb values from shared memory
// when they fit (f ≤ 8), else from global memory.
//
//===----------------------------------------------------------------------===//

#include "GpuKernels.h"
#include "lamina/Conversion/LnsToArith/CodeBuilder.h"
#include "lamina/Lns/IR/LnsCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::lamina;

static constexpr int64_t kThreadsPerBlock = 256;

/// The interleaved sbdb table of `type` as a constant global (one per type
/// in the module), read through memref.get_global.
static Value getSbdbTable(OpBuilder &b, Location loc, Operation *anchor,
                          lns::NumType type, int64_t &size) {
  auto module = anchor->getParentOfType<ModuleOp>();
  size = lns::getSbdbTableSize(type);
  std::string name = ("lamina_sbdb_table_f" + Twine(*type.getFracBits())).str();
  auto tableType = MemRefType::get({2 * size}, b.getI32Type());
  if (!module.lookupSymbol(name)) {
    std::vector<int32_t> interleaved = lns::computeInterleavedSbdbTable(type);
    OpBuilder moduleBuilder(module.getBodyRegion());
    memref::GlobalOp::create(
        moduleBuilder, loc, name, moduleBuilder.getStringAttr("private"),
        tableType,
        DenseIntElementsAttr::get(
            RankedTensorType::get({2 * size}, b.getI32Type()),
            ArrayRef(interleaved)),
        /*constant=*/true, /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc, tableType, name);
}

/// Tables up to this size are copied to shared memory by each CTA: every
/// addition reads one entry at a data-dependent position.
static constexpr int64_t kSharedTableBytes = 48 * 1024;

/// A shared-memory copy of `table` (memref<T x i32>) filled cooperatively by
/// the CTA's threads, or null when the table does not fit.
static Value stageInSharedMemory(OpBuilder &b, Location loc, Operation *anchor,
                                 Value table, Value tid) {
  auto globalType = cast<MemRefType>(table.getType());
  int64_t entries = globalType.getNumElements();
  if (entries * 4 > kSharedTableBytes)
    return Value();
  auto sharedType =
      MemRefType::get(globalType.getShape(), globalType.getElementType(),
                      MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
  auto module = anchor->getParentOfType<ModuleOp>();
  std::string name = "lamina_sbdb_table_shared_" + std::to_string(entries);
  if (!module.lookupSymbol(name)) {
    OpBuilder moduleBuilder(module.getBodyRegion());
    memref::GlobalOp::create(moduleBuilder, loc, name,
                             moduleBuilder.getStringAttr("private"), sharedType,
                             /*initial_value=*/Attribute(),
                             /*constant=*/false, IntegerAttr());
  }
  Value shared = memref::GetGlobalOp::create(b, loc, sharedType, name);
  IndexMath ix(b, loc);
  auto copy =
      scf::ForOp::create(b, loc, tid, ix(entries), ix(kThreadsPerBlock));
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(copy.getBody());
    Value i = copy.getInductionVar();
    memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, table, i),
                            shared, i);
  }
  gpu::BarrierOp::create(b, loc);
  return shared;
}

LogicalResult mlir::lamina::emitLnsLinear(OpBuilder &b, Location loc,
                                          const GpuLinear &layer,
                                          lns::SbdbMode mode) {
  Operation *op = layer.op;
  auto type = cast<lns::NumType>(layer.inputElt);
  auto weightType = cast<lns::NumType>(layer.weightElt);
  auto biasType = layer.biasElt ? cast<lns::NumType>(layer.biasElt) : type;
  if (mode == lns::SbdbMode::table &&
      (!type.getFracBits() || *type.getFracBits() > lns::kMaxTableFracBits))
    return op->emitOpError("sbdb mode 'table' is defined for a base given by "
                           "f <= ")
           << lns::kMaxTableFracBits << "; the layer computes in " << type;

  IndexMath ix(b, loc);
  Value elements = layer.hasStaticRows() ? ix(layer.m * layer.n)
                                         : ix.mul(layer.rows, layer.n);
  Value blocks = layer.hasStaticRows()
                     ? ix(llvm::divideCeil(layer.m * layer.n, kThreadsPerBlock))
                     : ix.ceilDiv(elements, kThreadsPerBlock);
  OpBuilder::InsertionGuard guard(b);
  auto launch = createKernelLaunch(b, loc, blocks, ix(1), kThreadsPerBlock);

  lns::SbdbTables tables;
  if (mode == lns::SbdbMode::table) {
    tables.interleaved = getSbdbTable(b, loc, op, type, tables.size);
    if (Value shared = stageInSharedMemory(b, loc, op, tables.interleaved,
                                           launch.getThreadIds().x))
      tables.interleaved = shared;
  }
  const lns::SbdbTables *tablesOrNull =
      mode == lns::SbdbMode::table ? &tables : nullptr;
  bool fast = !tablesOrNull && lns::isFastSbdbExact(type);

  Value flat = ix.add(ix.mul(launch.getBlockIds().x, kThreadsPerBlock),
                      launch.getThreadIds().x);
  Value inside = ix.lessThan(flat, elements);
  auto guardIf = scf::IfOp::create(b, loc, inside, false);
  b.setInsertionPointToStart(guardIf.thenBlock());
  Value row = ix.div(flat, layer.n);
  Value col = ix.rem(flat, layer.n);

  lns::CodeBuilder codes(b, loc);
  auto loop = scf::ForOp::create(b, loc, ix(0), ix(layer.k), ix(1),
                                 codes.constantCode(lns::codes::kZero));
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    lns::CodeBuilder inner(b, loc);
    Value x = memref::LoadOp::create(b, loc, layer.input, ValueRange{row, k});
    Value w = memref::LoadOp::create(b, loc, layer.weight, ValueRange{col, k});
    Value term = inner.mul(x, inner.toBase(w, weightType, type));
    Value acc = loop.getRegionIterArg(0);
    Value sum;
    if (fast) {
      auto [approx, nearTie] = inner.addFast(acc, term, type);
      auto exact = scf::IfOp::create(b, loc, b.getI64Type(), nearTie,
                                     /*withElseRegion=*/true);
      b.setInsertionPointToStart(exact.thenBlock());
      lns::CodeBuilder slow(b, loc);
      scf::YieldOp::create(b, loc, slow.add(acc, term, type));
      b.setInsertionPointToStart(exact.elseBlock());
      scf::YieldOp::create(b, loc, approx);
      b.setInsertionPointAfter(exact);
      sum = exact.getResult(0);
    } else {
      sum = inner.add(acc, term, type, tablesOrNull);
    }
    scf::YieldOp::create(b, loc, sum);
  }
  Value acc = loop.getResult(0);
  if (layer.bias) {
    Value bias = memref::LoadOp::create(b, loc, layer.bias, col);
    acc =
        codes.add(acc, codes.toBase(bias, biasType, type), type, tablesOrNull);
  }
  memref::StoreOp::create(b, loc, acc, layer.output, ValueRange{row, col});
  return success();
}
