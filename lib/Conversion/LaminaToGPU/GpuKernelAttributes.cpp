//===- GpuKernelAttributes.cpp - NVVM attributes of outlined kernels ------===//

#include "lamina/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAGPUKERNELATTRIBUTES
#include "lamina/Conversion/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;

namespace {
struct LaminaGpuKernelAttributesPass
    : lamina::impl::LaminaGpuKernelAttributesBase<
          LaminaGpuKernelAttributesPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      if (!kernel.isKernel())
        continue;
      bool resizesRegisters = kernel
                                  .walk([](NVVM::SetMaxRegisterOp) {
                                    return WalkResult::interrupt();
                                  })
                                  .wasInterrupted();
      if (resizesRegisters)
        kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                        b.getI32IntegerAttr(1));
    }
  }
};
} // namespace
