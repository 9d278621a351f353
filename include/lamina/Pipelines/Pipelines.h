//===- Pipelines.h - Lamina's end-to-end compilation pipelines --*- C++ -*-===//
//
// Named pipelines registered in lamina-opt and used by lamina-run and the
// Python package, so that every entry point compiles alike.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_PIPELINES_PIPELINES_H
#define LAMINA_PIPELINES_PIPELINES_H

#include "lamina/Conversion/LaminaToGPU/GpuChips.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace lamina {

/// How a CPU pipeline multiplies bf16 layer matmuls.
enum class Bf16Matmuls {
  Host,  ///< Dot where the host has AVX512-BF16, else Widen.
  Dot,   ///< AVX512-BF16's vdpbf16ps on operands packed in pairs of k.
  Widen, ///< Operands widened to f32, then FMAs.
};

struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<bool> fuseEpilogues{
      *this, "fuse-epilogues",
      llvm::cl::desc("fuse bias, activation and dropout into the matmul "
                     "tile (false: separate loop nests, for comparison)"),
      llvm::cl::init(true)};
  Option<bool> fuseRope{
      *this, "fuse-rope",
      llvm::cl::desc("fuse interleaved rotary embeddings into their "
                     "projections' epilogues, on one thread (slower than "
                     "the rotation's own pass today: the epilogue gathers "
                     "its tables element by element)"),
      llvm::cl::init(false)};
  Option<bool> lnsTables{
      *this, "lns-tables",
      llvm::cl::desc("LNS additions from precomputed tables where f <= 16 "
                     "(the codes of ideal mode, faster)"),
      llvm::cl::init(false)};
  Option<unsigned> threads{*this, "threads",
                           llvm::cl::desc("threads sharing the cache-level "
                                          "tiles of each matmul (OpenMP)"),
                           llvm::cl::init(1)};
  Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("vector width of the generated code (256: AVX2, 512: "
                     "AVX-512); 0: the host CPU's"),
      llvm::cl::init(0)};
  Option<Bf16Matmuls> bf16{
      *this, "bf16",
      llvm::cl::desc("how bf16 layer matmuls multiply (dot needs 512-bit "
                     "vectors and a CPU with AVX512-BF16 to run)"),
      llvm::cl::values(
          clEnumValN(Bf16Matmuls::Host, "host",
                     "dot where the host CPU has AVX512-BF16, else widen"),
          clEnumValN(Bf16Matmuls::Dot, "dot",
                     "vdpbf16ps on operands packed in pairs of k"),
          clEnumValN(Bf16Matmuls::Widen, "widen",
                     "operands widened to f32, then FMAs")),
      llvm::cl::init(Bf16Matmuls::Host)};
  Option<bool> outlineRepeatedBlocks{
      *this, "outline-repeated-blocks",
      llvm::cl::desc("one function per repeated block (a model's layers), "
                     "called once per layer, so that compile time stays "
                     "flat in depth (false: every layer compiled, for "
                     "comparison)"),
      llvm::cl::init(true)};
  Option<bool> outlineLoopNests{
      *this, "outline-loop-nests",
      llvm::cl::desc("one LLVM function per top-level loop nest, so that "
                     "LLVM's time stays linear in the program's size "
                     "(false: one function, for comparison)"),
      llvm::cl::init(true)};
  Option<bool> internalizeFunctions{
      *this, "internalize-functions",
      llvm::cl::desc("internal linkage for the entries behind the C "
                     "interfaces and the private functions (false: LLVM "
                     "sees every function as exported, for comparison)"),
      llvm::cl::init(true)};
  Option<bool> descriptorsByPointer{
      *this, "descriptors-by-pointer",
      llvm::cl::desc("the internal entries take their C interface's "
                     "descriptor pointers and load each field where it is "
                     "used (false: every field passed as an argument, for "
                     "comparison)"),
      llvm::cl::init(true)};
  Option<bool> dropUnusedArguments{
      *this, "drop-unused-arguments",
      llvm::cl::desc("the internal functions lose the arguments they never "
                     "read, such as the sizes and strides of static "
                     "memrefs (false: LLVM sees them all, for comparison)"),
      llvm::cl::init(true)};
};

/// lamina (+ upstream tensor IR) → LLVM dialect for the host CPU: epilogue
/// fusion, lowering to linalg, vectorized math, bufferization with results
/// as out-parameters, LLVM.
void buildLaminaCpuPipeline(OpPassManager &pm,
                            const CpuPipelineOptions &options);

struct GpuPipelineOptions : public PassPipelineOptions<GpuPipelineOptions> {
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc(gpuChipOptionHelp()),
      llvm::cl::init(kDefaultGpuChip.str())};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("NVPTX features, the PTX ISA version (sm_90a needs "
                     "+ptx80 or later)"),
      llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("kernel binaries: isa (PTX text), bin (cubin, needs "
                     "ptxas), fatbin (cubin + PTX, needs ptxas and "
                     "fatbinary)"),
      llvm::cl::init("isa")};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("NVPTX optimisation level"),
                            llvm::cl::init(3)};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit (ptxas, fatbinary, libdevice for the LNS "
                     "ideal mode's pow/log); default: $CUDA_ROOT, $CUDA_HOME, "
                     "$CUDA_PATH, else /usr/local/cuda when present; 'none': "
                     "no toolkit (PTX only, no libdevice)")};
  Option<std::string> lnsSbdb{
      *this, "lns-sbdb",
      llvm::cl::desc("Gaussian logarithm of LNS layers: ideal or table"),
      llvm::cl::init("ideal")};
};

/// lamina → host LLVM dialect with embedded kernels: fused linear layers as
/// wgmma (sm_90a) or mma.sync kernels, LNS layers as per-element kernels,
/// NVVM → PTX/cubin by gpu-module-to-binary; entry points take device
/// buffers, results as out-parameters.
void buildLaminaGpuPipeline(OpPassManager &pm,
                            const GpuPipelineOptions &options);

/// The CUDA toolkit to use: `option` if set ("none": no toolkit, empty),
/// else $CUDA_ROOT, $CUDA_HOME or $CUDA_PATH (upstream's search), else
/// /usr/local/cuda when present, else empty.
std::string findCudaToolkit(llvm::StringRef option);

/// What a module needs before the host reads its entry's signature: lazy
/// weights materialized, pipeline cuts split into stage functions, the
/// layouts of sharded results recorded on the signature.
void buildLaminaHostPreparePipeline(OpPassManager &pm);

/// The name `buildLaminaHostPreparePipeline` is registered under.
inline constexpr llvm::StringLiteral kHostPreparePipeline =
    "lamina-host-prepare";

/// Registers `lamina-cpu-pipeline`, `lamina-gpu-pipeline` and
/// `lamina-host-prepare`.
void registerLaminaPipelines();

} // namespace lamina
} // namespace mlir

#endif // LAMINA_PIPELINES_PIPELINES_H
