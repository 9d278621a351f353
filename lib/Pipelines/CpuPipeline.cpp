//===- CpuPipeline.cpp - lamina-cpu-pipeline ------------------------------===//

#include "lamina/Codegen/Passes.h"
#include "lamina/Conversion/Passes.h"
#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Lns/Transforms/Passes.h"
#include "lamina/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

/// The host's vector width: 512 bits with AVX-512 (F and VL), else AVX2's
/// 256. The JIT compiles for the host.
static unsigned hostVectorBits() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features.lookup("avx512f") && features.lookup("avx512vl") ? 512
                                                                   : 256;
}

/// Whether the host executes AVX512-BF16's dot products (vdpbf16ps).
static bool hostHasBf16DotProducts() {
  return llvm::sys::getHostCPUFeatures().lookup("avx512bf16");
}

void mlir::lamina::buildLaminaCpuPipeline(OpPassManager &pm,
                                          const CpuPipelineOptions &options) {
  unsigned vectorBits =
      options.vectorBits ? unsigned(options.vectorBits) : hostVectorBits();
  bool bf16Dots =
      vectorBits == 512 &&
      (options.bf16 == Bf16Matmuls::Dot ||
       (options.bf16 == Bf16Matmuls::Host && hostHasBf16DotProducts()));
  // Layers → one rank's program → fused linear ops → linalg; collectives →
  // MPI runtime calls.
  pm.addPass(createLaminaDecompose());
  pm.addPass(createLaminaPartition());
  if (options.fuseEpilogues) {
    // Rotary embeddings in the projections' epilogues on request, on one
    // thread: the threads' parts of a matmul take no pair partners.
    LaminaFuseEpiloguesOptions fuse;
    fuse.rope = options.fuseRope && options.threads == 1;
    pm.addPass(createLaminaFuseEpilogues(fuse));
  }
  LaminaSelectCpuStrategyOptions strategy;
  strategy.vectorBits = vectorBits;
  strategy.bf16Dots = bf16Dots;
  strategy.threads = options.threads;
  pm.addPass(createLaminaSelectCpuStrategy(strategy));
  pm.addPass(createConvertLaminaToLinalg());
  pm.addPass(createConvertShardToLaminaMPI());
  pm.addPass(lns::createLaminaLnsDecompose());
  if (options.lnsTables)
    pm.addPass(lns::createLaminaLnsTables());
  ConvertLnsToArithOptions lnsToArith;
  lnsToArith.vectorBits = vectorBits;
  pm.addPass(createConvertLnsToArith(lnsToArith));
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLaminaHoistWeightPacking());
  pm.addPass(createLaminaDecomposeAggregates());
  // Each repeated block once: the schedules, bufferization and LLVM below
  // see one layer, whatever the depth.
  if (options.outlineRepeatedBlocks)
    pm.addPass(createLaminaOutlineRepeatedBlocks());

  // Cache and register tiles of each matmul with its epilogue, vectorized.
  LaminaSelectCpuLoopTilesOptions loopTiles;
  loopTiles.vectorBits = vectorBits;
  pm.addPass(createLaminaSelectCpuLoopTiles(loopTiles));
  LaminaCpuTileAndVectorizeOptions schedule;
  schedule.vectorBits = vectorBits;
  pm.addPass(createLaminaCpuTileAndVectorize(schedule));
  // The partial tiles of sizes the tiles do not divide are vectorized
  // under vector.mask: masked transfers from here on.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMaskPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLaminaApproximateMath());

  // Tensors → buffers; results become caller-provided out-parameters, one
  // per result.
  pm.addNestedPass<func::FuncOp>(createLaminaDistinctResults());
  pm.addNestedPass<func::FuncOp>(createLaminaResultShapedAllocations());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Buffers threaded through loops (a tiled transpose's) fold into the
  // allocation itself, which the next pass can then replace by the
  // out-parameter (no copy of the whole result), and a tile's copy onto
  // itself (equal subviews) goes away.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  // Results an outlined block returns are written straight into the
  // caller's out-parameters.
  pm.addNestedPass<func::FuncOp>(createLaminaElideResultCopies());
  bufferization::BufferDeallocationPipelineOptions deallocation;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);

  // Parallel cache tiles → OpenMP worksharing loops.
  if (options.threads > 1) {
    pm.addPass(createForallToParallelLoopPass());
    ConvertSCFToOpenMPPassOptions openMP;
    openMP.numThreads = options.threads;
    pm.addPass(createConvertSCFToOpenMPPass(openMP));
  }

  // Vectors → 1-D AVX2 vectors, loops → LLVM.
  if (bf16Dots)
    pm.addPass(createLaminaCpuBf16DotProducts());
  pm.addPass(createLaminaCpuLowerVectors());
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(createLaminaExpandCopies());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createLaminaCpuPrefetchRows());
  // One LLVM function per loop nest: LLVM's time stays linear in them; and
  // one per distinct nest: a model's repeated blocks share theirs.
  if (options.outlineLoopNests) {
    pm.addPass(createLaminaOutlineLoopNests());
    pm.addPass(createLaminaDeduplicateFunctions());
  }
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // bf16 arithmetic in f32, rounded back after each op: what LLVM's x86
  // back end does with it, but there the rounding of a CPU without
  // AVX512-BF16 is a compiler-rt call (__truncsfbf2) that the JIT's process
  // does not have. Then bf16 conversions as integer arithmetic: no
  // compiler-rt call at run time.
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.x86Vector = bf16Dots;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createLaminaHalfFloatMasksAsIntegers());
  if (options.internalizeFunctions) {
    pm.addPass(createLaminaInternalizeFunctions());
    if (options.descriptorsByPointer)
      pm.addPass(createLaminaDescriptorsByPointer());
    // The descriptors a callee rebuilds from its arguments folded first:
    // what is left unread was never needed.
    if (options.dropUnusedArguments) {
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createLaminaDropUnusedArguments());
    }
  }
  pm.addPass(createCanonicalizerPass());
}
