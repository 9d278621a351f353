//===- Passes.td - Conversions out of Lamina's dialects ----*- tablegen -*-===//

#ifndef LAMINA_CONVERSION_PASSES_TD
#define LAMINA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLaminaToLinalg : Pass<"convert-lamina-to-linalg"> {
  let summary = "Lower lamina ops to linalg, tensor and arith";
  let description = [{
    Every float layer becomes a transposed-B `linalg.matmul` (f32
    accumulation for f16/bf16 inputs) writing an accumulator, followed by
    one element-wise `linalg.generic` epilogue that adds the bias, applies
    the activation and the dropout and converts to the result type, reading
    the accumulator it overwrites. The two carry `lamina.stage =
    #lamina<stage matmul>` and `#lamina<stage epilogue>` so that the CPU
    and GPU pipelines fuse the epilogue into the matmul tile.

    Dropout draws its mask from a counter-based Philox-4x32-10 generator
    written in `arith`: key = the seed operand, counter = (global element
    index >> 2, the op's offset, stream), word (index & 3) for the element,
    so masks depend only on (seed, offset, element index) and are identical
    on every target and every run. With packed weights the mask is drawn
    four elements per Philox call by a separate generic (a quarter of the
    work), then read by the epilogue.
    `fused_qkv` lowers to the projection followed by the interleaved split.
    Layers on LNS numbers lower to `lns.linear` / `lns.add`.

    Sync points must have been partitioned into collectives first; in a
    single-rank program they are the identity. A vocabulary-parallel
    `cross_entropy` (or its gradient) all-reduces its row statistics with
    `shard.all_reduce` over the partitioner's grid.

    A layer's matmul follows the `#lamina.cpu_matmul` under its
    `lamina.codegen` (chosen by `lamina-select-cpu-strategy`); without one
    it is a plain `linalg.matmul`. With `weight_block = B`, the float weight
    `W[N, K]` is packed by `linalg.pack` into `Wp[N/B, K, B]`, so that a
    register tile reads `B` contiguous output features per `k`; the matmul
    then becomes a `linalg.generic` over `(m, n1, n0, k)` writing
    `[M, N/B, B]` (the same memory as row-major `[M, N]`), and the epilogue
    runs on that view.

    With `row_panel = P` as well, the matmul's input, a 2-D transpose `Tᵀ`
    (the backward's `dW = dyᵀ·x`), is packed from `T[K, M]` itself into
    `Xp[M/P, K, P]`: the matmul becomes a generic over
    `(m1, m0, n1, n0, k)` writing `[M/P, P, N/B, B]`, and a register tile
    reads its `P` rows' elements of one `k` as one contiguous run, where
    the materialized transpose would cost a pass over `T` and the strided
    reads of `T` in place one TLB miss per `k`. An input that is not such a
    transpose is an error.

    With `k_group = 2`, bf16 operands are packed in pairs of consecutive
    `k`, the layout of AVX512-BF16's `vdpbf16ps` (a dot product of two bf16
    pairs per f32 lane): `Wp[N/B, K/2, B, 2]`, `Xp[M/P, K/2, P, 2]`, and
    `x[M, K]` read as `[M, K/2, 2]` (the same memory). The generic then has
    two reduction loops, `(m, n1, n0, k2, p)` or `(m1, m0, n1, n0, k2, p)`.
    The matmul sums in the layout's `accumulator` type.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::shard::ShardDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::lamina::lns::LnsDialect",
  ];
}

def ConvertLnsToArith : Pass<"convert-lns-to-arith", "::mlir::ModuleOp"> {
  let summary = "Lower lns numbers to int64 codes and their ops to arith, "
                "math and tensor";
  let description = [{
    Every `!lns.num` becomes its packed `i64` code (tensors of them, tensors
    of `i64`), across function signatures and any op that merely carries
    such values. Multiplication, division, negation, absolute value, square
    root and integer powers are integer arithmetic with the spec's zero
    rules; addition uses the Gaussian logarithm `sbdb`, in `ideal` mode
    `2·roundHalfEven(log|1 − 2s + pow(b, z)| / log b)` evaluated in double
    exactly as written (libm `pow` and `log` at run time; `log b` computed
    when compiling, as the reference does). Encoding, decoding and base
    changes follow the same formulas; operands in another base are converted
    to the first operand's base first.

    `sum`, `matmul` and `linear` become a `tensor.generate` over the output
    elements whose body runs the reduction as an `scf.for` from the first
    term to the last: the sequential order that is part of the semantics.
    A static 2-D `linear` instead runs K as the outer `scf.for`, each step an
    element-wise `linalg.generic` over all outputs (`acc = add(acc, mul(x,
    w))`), which keeps every sum's order and vectorizes across outputs.
    In `ideal` mode (f ≤ 25) it is explicit vector code instead: per row of
    x, each step adds one term to a vector of outputs at a time (8 i32
    lanes when every input code is below 2^29, else 4 i64 lanes), sbdb from
    piecewise cubics in −z (one 32-byte segment row per lane, a proven
    error bound against the exact formula), and the lanes whose rounding
    the bound cannot decide are recomputed with the exact formula after
    each sweep of the row.
    Element-wise ops on tensors become element-wise `linalg.generic`s.

    In `sbdb table` mode (f ≤ 16), the ideal values of sbdb for every z
    from 0 down to `2·round(log_b(b − 1))` are computed when compiling, with
    the same double formula, and stored as two i32 constant tables (one per
    sign); additions read them instead of calling pow and log. The
    `order pairwise` mode is not lowered yet and is reported on the op.
    A static 2-D `linear` in table mode keeps a tile of 4 rows × 2 vectors
    of `vector-bits` in registers (512 on AVX-512: 16 i32 lanes per table
    gather instead of 8).
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"256",
           "Vector width of the table-mode linear kernel: 256 (AVX2) or "
           "512 (AVX-512)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def ConvertShardToLaminaMPI : Pass<"convert-shard-to-lamina-mpi",
                                    "::mlir::ModuleOp"> {
  let summary = "Lower the collectives of a partitioned program to calls of "
                "Lamina's MPI runtime";
  let description = [{
    Upstream `convert-shard-to-mpi` lowers only `shard.all_reduce`; this
    pass lowers every collective a partitioned Lamina program uses, on
    tensors, before bufferization:

    - `shard.all_reduce` (sum), `shard.all_gather` and `shard.reduce_scatter`
      (sum) become calls of `laminaMpiAllReduce_<type>`,
      `laminaMpiAllGather_<type>` and `laminaMpiReduceScatter_<type>` on the
      operand's buffer and a fresh result buffer (unranked memrefs; the
      runtime reorders blocks of non-leading axes around `MPI_Allgather` /
      `MPI_Reduce_scatter_block`, and reduces f16/bf16 in f32);
    - `shard.all_slice` (no communication) becomes a `tensor.extract_slice`
      of the process's block;
    - each collective runs along its one grid axis: the call's last
      argument is the runtime's axis (data 0, pipeline 1, tensor 2) that the
      axis's name in the module's `lamina.grid` stands for (`dp`, `pp`,
      `tp`); without `lamina.grid` the grid's one axis is the tensor axis;
    - `shard.process_multi_index` of one axis, and the
      `shard.process_linear_index` of a one-axis grid, become
      `laminaMpiAxisRank(axis)`;
    - `lamina.reduce_replicas` (a gradient's sum or mean over the
      data-parallel replicas) becomes `laminaMpiReplicaReduceStart_<type>`
      where the op stands, which starts a non-blocking `MPI_Iallreduce` (or,
      with `to R`, `MPI_Ireduce` to replica R) on the data axis, and `laminaMpiReplicaReduceWait_<type>` right before
      the result's first use, which completes it (and divides by the number
      of replicas for a mean): the ops in between hide the communication;
    - `shard.grid` symbols are erased.

    Any other `shard` op, or a reduction other than sum, is an error: a
    collective is never left for a later stage to trip over.

    The runtime (lib/Runtime) calls the MPI that Lamina links (MPICH), so no
    ABI constant of any MPI appears in the IR.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertLaminaToGPU : Pass<"convert-lamina-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower fused linear layers to GPU kernels on tensor cores "
                "and LNS linear layers to per-element GPU kernels";
  let description = [{
    Every function holding `lamina.fused_linear` ops becomes a host function
    on device buffers: tensor arguments become memrefs in GPU memory, results
    become trailing out-parameters (as on the CPU path), intermediate values
    `gpu.alloc`ed and freed before returning; it gets `llvm.emit_c_interface`
    so that ahead-of-time artefacts export a C entry point.

    Each float fused linear (f16/bf16 inputs, f32 accumulation, f32/bf16/f16
    output, bias + activation + dropout epilogue) becomes one `gpu.launch`,
    of the kernel family `chip` has in Lamina's list of supported chips
    (`include/lamina/Conversion/LaminaToGPU/GpuChips.h`):

    - Hopper (`sm_90a`, the default `chip`): warp-specialised wgmma kernel. One
      producer warpgroup issues TMA loads (128-byte swizzle) of x[BM, 64] and
      W[BN, 64] tiles into a ring of `stages` shared-memory buffers guarded
      by full/empty mbarrier pairs; BM/64 consumer warpgroups each run
      `wgmma.mma_async m64nBNk16` on K-major descriptors of both operands
      (W stays [N, K]: upstream's `nvgpu.warpgroup.mma` only advances B
      correctly for [K, N], so the descriptors are built here), release a
      stage once the next group is issued (`wgmma.wait_group 1`), and apply
      the epilogue to the accumulator registers before storing. Tiles:
      64×64 with 8 stages for M ≤ 64 (weight streaming), else 128×256
      (N % 256 = 0), 128×128 (N > 64) or 128×64, 4–8 stages.
    - the other chips of the list (Ampere and later): `mma.sync m16n8k16`
      kernel: 128×128
      block tile, four warps of 64×64, `cp.async` copies into a 3-stage
      shared-memory ring, `ldmatrix` fragments, the same register epilogue.

    Both take output tiles from a 1-D grid in groups of 8 row blocks, so
    that CTAs running together share rows of x and W in L2.

    Dropout draws the CPU path's Philox stream (key = seed, counter from the
    element's row-major index), so masks are identical. GELU's `tanh`/`erf`
    are left to `lamina-approximate-math`, the CPU's polynomials.

    LNS linear layers and `lns.linear` ops (buffers of i64 codes; an
    `lns.linear` keeps its own sbdb mode) become one thread per output
    element running the spec's sequential K loop through the CPU path's
    CodeBuilder: `ideal` additions by the certified fast path, recomputed
    with the exact double formula (libdevice pow/log) where its error bound
    cannot decide the rounding; `table` mode (`lns-sbdb=table`) reads the
    precomputed ideal values from a constant global table, copied into
    shared memory by each block when it fits (48 KiB: f ≤ 8).

    The leading dims (the rows M) may be dynamic: the host reads M from the
    buffer, sizes the grid and intermediates from it, and every row is
    bounds-checked; K, N, weights and biases are static.

    The backward of `lamina-generate-backward` lowers too: `lamina.matmul`s
    (dx = dy·W, dW = dyᵀ·x) as layers on operands transposed by a
    shared-memory tiled kernel (`linalg.transpose` [1, 0]); an
    `activation_grad` of a matmul used only there in that matmul's epilogue
    (the saved pre-activation read in pairs); bias gradients (`linalg.reduce`
    sums over the leading dims into a zero fill, bf16/f16 extended to f32,
    and their one `arith.truncf`) as column sums in f32; other
    `activation`, `activation_grad`, tensor `arith.addf`/`truncf` one thread
    per element in f32; `tensor.collapse_shape` as a view. Every function
    holding a `lamina` or `lns` op is converted; anything else in it
    (collectives, unfused layers and other backward ops such as dropout's,
    dynamic K or N, f32 tensor-core inputs, misaligned K) is a diagnosed
    error.
  }];
  let options = [
    Option<"chip", "chip", "std::string",
           /*default=*/"::mlir::lamina::kDefaultGpuChip.str()",
           "target GPU, one of the supported chips (GpuChips.h)">,
    Option<"lnsSbdb", "lns-sbdb", "std::string", /*default=*/"\"ideal\"",
           "Gaussian logarithm of LNS layers: ideal (fast path with exact "
           "fallback) or table (precomputed ideal values, f <= 16); both "
           "give the codes of the CPU path">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def LaminaGpuKernelAttributes : Pass<"lamina-gpu-kernel-attributes",
                                     "::mlir::gpu::GPUModuleOp"> {
  let summary = "Set the NVVM attributes that Lamina's kernels need after "
                "outlining";
  let description = [{
    `setmaxnreg` is ignored by ptxas unless the kernel declares how many CTAs
    it needs per SM: kernels containing `nvvm.setmaxregister` get
    `nvvm.minctasm = 1`. Runs on outlined `gpu.func` kernels, because
    outlining does not carry attributes of `gpu.launch`.
  }];
}

def LaminaGpuNativeMath : Pass<"lamina-gpu-native-math",
                               "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower fma and absf in kernels to what PTX does natively";
  let description = [{
    convert-gpu-to-nvvm turns every `math` op into a libdevice call, so the
    GELU polynomials (built from `fma` and `absf`) would need libdevice, and
    a CUDA toolkit, for single instructions. This pass rewrites `math.fma`
    into `llvm.intr.fma` (PTX `fma.rn`) and `math.absf` into clearing the
    sign bit, so only transcendental functions (the LNS `ideal` mode's f64
    `pow` and `log`) still come from libdevice.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // LAMINA_CONVERSION_PASSES_TD
