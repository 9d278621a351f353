//===- SharedMemory.cpp - Dynamic shared memory of Lamina's kernels -------===//

#include "GpuKernels.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::lamina;

static constexpr StringLiteral kSharedMemorySymbol = "lamina_dyn_smem";

/// NVVM's shared address space, numeric: with #gpu.address_space the host
/// copy of the global cannot be converted.
static constexpr int64_t kSharedSpace = 3;

Value mlir::lamina::buildDynamicSharedMemory(OpBuilder &b, Location loc,
                                             Operation *anchor,
                                             int64_t bytes) {
  Type i8 = b.getI8Type();
  Attribute space = b.getI64IntegerAttr(kSharedSpace);
  auto declaredType =
      MemRefType::get({0}, i8, MemRefLayoutAttrInterface(), space);
  auto module = anchor->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol(kSharedMemorySymbol)) {
    OpBuilder moduleBuilder(module.getBodyRegion());
    memref::GlobalOp::create(moduleBuilder, module.getLoc(),
                             kSharedMemorySymbol,
                             moduleBuilder.getStringAttr("public"),
                             declaredType, /*initial_value=*/Attribute(),
                             /*constant=*/false,
                             moduleBuilder.getI64IntegerAttr(1024));
  }
  Value declared =
      memref::GetGlobalOp::create(b, loc, declaredType, kSharedMemorySymbol);
  return memref::ReinterpretCastOp::create(
      b, loc,
      MemRefType::get({bytes}, i8, MemRefLayoutAttrInterface(), space),
      declared, /*offset=*/0, /*sizes=*/ArrayRef<int64_t>{bytes},
      /*strides=*/ArrayRef<int64_t>{1});
}
