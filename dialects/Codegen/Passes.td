//===- Passes.td - Code generation on linalg, vector, memref -*- tablegen -*-===//
//
// The passes that turn Lamina's lowered programs into fast CPU code: tiling
// and vectorization, vector lowering, polynomial math, weight packing once
// per program. They act on upstream dialects (linalg, vector, memref,
// math), apart from the model-level passes of dialects/Lamina/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CODEGEN_PASSES_TD
#define LAMINA_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LaminaDecomposeAggregates : Pass<"lamina-decompose-aggregates"> {
  let summary = "Decompose aggregated linalg ops (softmax) and packs into "
                "simple ones";
  let description = [{
    Ops such as `linalg.softmax` have no direct lowering to loops or
    vectors; they implement `AggregatedOpInterface`, whose decomposition
    (max, exp, sum, div as `linalg.generic`s) this pass applies. Likewise
    `linalg.pack` becomes `tensor.pad` + `tensor.expand_shape` +
    `linalg.transpose`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LaminaApproximateMath : Pass<"lamina-approximate-math"> {
  let summary = "Replace tanh, erf and exp by vectorizable polynomials";
  let description = [{
    The default lowering of `math.tanh` is a scalar libm call per element,
    which halves the speed of a fused GELU epilogue. Upstream's polynomial
    approximations (max error 2.7e-7 for tanh on f32) vectorize; this pass
    applies them to f32 `tanh`, `erf` and `exp`. The same polynomials serve
    the GPU path, so both targets compute the same GELU.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def LaminaHoistWeightPacking : Pass<"lamina-hoist-weight-packing",
                                     "::mlir::ModuleOp"> {
  let summary = "Move the packing of weight arguments into a function run "
                "once, when the program is loaded";
  let description = [{
    Packing a weight costs more than a whole small-batch call (4 ms for a
    4096×1024 weight against 10 ms for an M = 16 call), so it must not run
    per call. For every public function `@f` not called within the module
    whose body packs arguments
    (`linalg.pack` of a block argument, or of its element-wise cast: an
    autocast f32 weight truncated to bf16), this pass creates
    `@f_pack_weights`, taking `@f`'s arguments and returning the packed
    weights, and gives `@f` one extra trailing argument per packed weight in
    place of the packing. The module attribute `lamina.weight_packing` maps
    `f` to the packed types, which tells a runtime to call `@f_pack_weights`
    once and pass its results to every call of `@f`.

    ```mlir
    func.func @f(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> ... {
      %p = linalg.pack %w inner_dims_pos = [0] inner_tiles = [16] into %e
      ...
    // becomes
    func.func @f(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>,
                 %p: tensor<2x64x16xf32>) -> ...
    func.func @f_pack_weights(%x: ..., %w: ...) -> tensor<2x64x16xf32>
    ```
  }];
  // The module's lamina.weight_packing records #lamina.packed_weights.
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::lamina::LaminaDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LaminaSelectCpuStrategy : Pass<"lamina-select-cpu-strategy"> {
  let summary = "Choose how each float matmul is laid out for the CPU's "
                "register tiles";
  let description = [{
    The CPU target's strategy: for each float matmul of a layer
    (`lamina.fused_linear`, `lamina.matmul`, `lamina.fused_qkv`, a linear
    layer) whose static weight `W[N, K]` has `N % 16 == 0`, this pass
    records under the op's `lamina.codegen` the `#lamina.cpu_matmul` that
    `convert-lamina-to-linalg` follows; the others stay plain
    `linalg.matmul`s. An op that already has a layout keeps it.

    - `weight_block = 16`: two AVX2 registers of f32 (one AVX-512
      register) of output features per `k`.
    - `row_panel`: the register tile's rows (8 with `vector-bits=512`, 4
      with 256), for a matmul without epilogue whose input is a 2-D
      transpose `Tᵀ` with `M` divisible by it (the backward's
      `dW = dyᵀ·x`), and whose result is its accumulator.
    - `k_group = 2` with `bf16-dots` (AVX512-BF16's `vdpbf16ps`), for bf16
      operands of an even depth `K ≥ 4`.
    - `accumulator`: f32 for f16/bf16 operands, else their type.
    - `tiles`: the `#lamina.cpu_tiles` from the static shape: cache tiles
      of 128 rows × 2 or 8 blocks for L2 (`M ≥ 256`), slabs of rows that
      fit a share of L3, register tiles of 4 rows × 1 block (8 × 2 with
      512-bit vectors), k in steps of 4 or 2, chunks of k shared by the
      register tiles of uncached matmuls; with `threads=N`, each thread's
      part of the blocks. Dynamic rows, a depth of 1, or a single register
      tile get no tiles: the matmul stays a loop nest.

    ```mlir
    %y = lamina.fused_linear %x, %w, %b : ... -> tensor<8x32xf32>
    // becomes
    %y = lamina.fused_linear %x, %w, %b {lamina.codegen =
        #lamina.cpu_matmul<weight_block = 16, accumulator = f32>} ...
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"256",
           "vector width of the target in bits (256: AVX2, 512: AVX-512)">,
    Option<"bf16Dots", "bf16-dots", "bool", /*default=*/"false",
           "the target executes AVX512-BF16's dot products (with "
           "vector-bits=512)">,
    Option<"threads", "threads", "unsigned", /*default=*/"1",
           "threads sharing each matmul's blocks">,
  ];
  let dependentDialects = ["::mlir::lamina::LaminaDialect"];
}

def LaminaSelectCpuLoopTiles : Pass<"lamina-select-cpu-loop-tiles",
                                     "::mlir::ModuleOp"> {
  let summary = "Choose the CPU schedule and tiles of each op between the "
                "layers";
  let description = [{
    The CPU target's strategy for the linalg ops between the layers, once
    they are lowered: from each op's static shape, this pass records under
    its `lamina.codegen` the `#lamina.cpu_loop_tiles` that
    `lamina-cpu-tile-and-vectorize` applies (a layer's packed matmul and its
    epilogue follow their `#lamina.cpu_matmul` instead):

    - element-wise ops (residual adds, a bias add or activation that was
      not fused, the epilogue of an unpacked matmul, a gather) and
      transposes: tiles of rows of 16 lanes (8 × 8 for a transpose), the
      last one partial and masked where 16 does not divide the dim;
    - float reductions along the last dimension whose combiner is an
      addition or a maximum: rows, each split into 16 lanes;
    - float sums over every dim but the last: tiles of the kept dim;
    - transposes that move whole rows of 16 or 8: `row_transpose`;
    - `linalg.matmul` and `linalg.batch_matmul` (attention's): register
      tiles of 4 × 16 (8 × 32 with `vector-bits=512`), K in steps of 4.

    Ops whose shapes allow no clean schedule (dynamic, integer
    reductions, bodies reading `linalg.index`, booleans) get none and stay
    loop nests.

    ```mlir
    %0 = linalg.generic ... {lamina.codegen = #lamina.cpu_loop_tiles<
        elementwise tiles = [1, 16] vector_sizes = [1, 16]>}
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"256",
           "vector width of the target in bits (256: AVX2, 512: AVX-512)">,
  ];
  let dependentDialects = ["::mlir::lamina::LaminaDialect"];
}

def LaminaCpuTileAndVectorize : Pass<"lamina-cpu-tile-and-vectorize",
                                      "::mlir::ModuleOp"> {
  let summary = "Tile each packed matmul with its epilogue for caches and "
                "registers, and vectorize the tile";
  let description = [{
    For every `#lamina<stage epilogue>` op fed by a packed matmul (the
    `(m, n1, n0, k)` generic of `convert-lamina-to-linalg`), or a packed
    matmul without an epilogue, this pass applies the `#lamina.cpu_tiles`
    of the matmul's layout (`lamina.codegen`, chosen by
    `lamina-select-cpu-strategy`) as a transform-dialect schedule:

    1. fuse the epilogue with the matmul and its fill into the cache-level
       tile (with `thread_blocks`, first into one `scf.forall` part per
       thread, which the pipeline runs on its threads through OpenMP);
    2. fuse again into the register tile;
    3. tile K by `k_step` and vectorize the matmul, the fill and the
       epilogue;
    4. hoist the accumulator out of the K loop, so that it lives in
       registers and the epilogue (bias, GELU, dropout) is applied to it
       before the output tile is written once.

    A packed matmul whose layout has no tiles stays a loop nest. The ops
    between the layers get the schedule of their `#lamina.cpu_loop_tiles`
    (`lamina-select-cpu-loop-tiles`):

    element-wise ops in tiles, vectorized (a partial last tile with
    masks); transposes that move only dims of size 1 become the reshapes
    they are; float row reductions tiled into rows, each row's reduction
    split into 16 lanes accumulated in registers and combined once at the
    row's end (`tile_reduction_using_for`), so that the row's element-wise
    work is vectorized and the sum is reordered as PyTorch's vectorized
    kernels reorder it; column sums, row transposes and the matmuls
    between layers in their tiles. Ops without a schedule are left to the
    loop lowering.

    `vector-bits` is the target's vector width, 256 (AVX2) or 512
    (AVX-512), which the strategies' tiles were chosen for. With 512
    every function gets the LLVM attribute
    `min-legal-vector-width=512`, without which the x86 back end splits
    512-bit vectors in two on CPUs that prefer 256-bit ones.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"256",
           "vector width of the target in bits (256: AVX2, 512: AVX-512)">,
  ];
  let dependentDialects = ["::mlir::transform::TransformDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def LaminaCpuBf16DotProducts : Pass<"lamina-cpu-bf16-dot-products",
                                     "::mlir::ModuleOp"> {
  let summary = "Lower bf16 contractions over pairs of k to AVX512-BF16 "
                "dot products";
  let description = [{
    After `lamina-cpu-tile-and-vectorize` and bufferization, each
    contraction of a bf16 matmul packed in pairs of k
    (`convert-lamina-to-linalg{bf16-pairs}`: x read as `[M, K/2, 2]`, W as
    `[N/16, K/2, 16, 2]`) takes its operands' widening to f32 as its own,
    is unrolled to one row, one block of 16 features and one pair of k, and
    becomes `x86vector.avx512.dot` (`vdpbf16ps`: the row's pair broadcast
    to every 32-bit lane, times the 16 features' pairs, added to 16 f32
    accumulators) through upstream x86vector's packed-type dot-product
    patterns. A contraction those patterns decline stays as it was, and
    `lamina-cpu-lower-vectors` lowers it to FMAs on widened operands: the
    same result, more slowly. `lamina-cpu-pipeline{bf16=dot}` runs this pass;
    the JIT must then target a CPU with AVX512-BF16.
  }];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def LaminaCpuLowerVectors : Pass<"lamina-cpu-lower-vectors",
                                  "::mlir::ModuleOp"> {
  let summary = "Lower vector contractions and transfers for AVX2";
  let description = [{
    After bufferization: contractions become outer products (FMAs of a
    broadcast row element and a 16-wide weight row), then transposes,
    broadcasts, shape casts and n-D transfers are lowered to 1-D vectors,
    the form LLVM turns into the AVX2 micro-kernel.
  }];
  let dependentDialects = ["::mlir::transform::TransformDialect",
                           "::mlir::vector::VectorDialect"];
}

def LaminaCpuPrefetchRows : Pass<"lamina-cpu-prefetch-rows"> {
  let summary = "Prefetch the weight rows a loop streams from memory";
  let description = [{
    A register tile's loop over `k` reads the packed weight `Wp[n1, k, n0]`
    one row of whole cache lines per `k`. Where no cache tile keeps that
    panel for other register tiles (decoding: a few rows of x, every weight
    read once), the hardware prefetcher alone leaves the loop waiting on
    memory: at 16 × 4096 × 4096 an AVX-512 Xeon read the weight at
    8–9 GB/s, and 15–17 GB/s with software prefetches 4 KiB ahead.
    `lamina-cpu-tile-and-vectorize` marks such loops with
    `lamina.prefetch_rows = <bytes ahead>`.

    After bufferization and `lower-affine`, for each marked `scf.for` and
    each 1-D `vector.transfer_read` directly in its body that reads a whole
    row of a memref with an identity layout (the last index 0, the vector as
    long as the last dim, a row a multiple of 64 bytes) at a row index `iv`
    or `iv + c` of the loop's induction variable, this pass inserts a
    `memref.prefetch` of the row that many bytes ahead, clamped to the last
    row so that no address leaves the memref. The mark is removed.

    ```mlir
    scf.for %k = %c0 to %c4096 step %c4 { ...
      %r = vector.transfer_read %w[%n, %k, %c0], %pad {in_bounds = [true]}
          : memref<256x4096x16xf32>, vector<16xf32>
    } {lamina.prefetch_rows = 4096 : i64}
    // gets, before the read,
      %ahead = arith.addi %k, %c64 : index
      %row = arith.minui %ahead, %c4095 : index
      memref.prefetch %w[%n, %row, %c0], read, locality<3>, data
          : memref<256x4096x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def LaminaOutlineLoopNests
    : Pass<"lamina-outline-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Give every top-level loop nest of a function a function "
                "of its own";
  let description = [{
    A whole model is one function of hundreds of loop nests, one after the
    other. LLVM's scalar evolution walks from each loop back through the
    dominating blocks to the function's entry (`isBasicBlockEntryGuardedByCond`),
    so optimising such a function grows with the square of its loops: at
    GPT-2-small width, `opt -O3` took 1.4 s on one layer's backward and 18 s
    on four layers', 79% of it in `IndVarSimplify`.

    After bufferization, with loops still `scf` (or `omp`), this pass moves
    each loop nest directly in a function's body (an op implementing
    `LoopLikeOpInterface`, or an OpenMP parallel region) into a private
    function `@<function>_nest<i>` taking the values it uses from outside
    (constants are cloned in), marked `noinline` for LLVM, and calls it: each
    LLVM function then holds one nest, and the cost is linear in their
    number. A function with fewer than `min-nests` nests is left as it is.

    ```mlir
    func.func @f(%a: memref<64xf32>, %b: memref<64xf32>) {
      scf.for %i = %c0 to %c64 step %c8 { ... %a ... }
      scf.for %i = %c0 to %c64 step %c8 { ... %b ... }
    }
    // becomes
    func.func @f(%a: memref<64xf32>, %b: memref<64xf32>) {
      call @f_nest0(%a) : (memref<64xf32>) -> ()
      call @f_nest1(%b) : (memref<64xf32>) -> ()
    }
    func.func private @f_nest0(%a: memref<64xf32>)
        attributes {passthrough = ["noinline"]} {
      ...
    }
    ```
  }];
  let options = [
    Option<"minNests", "min-nests", "unsigned", /*default=*/"2",
           "outline the nests of functions with at least this many">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
}

def LaminaOutlineRepeatedBlocks
    : Pass<"lamina-outline-repeated-blocks", "::mlir::ModuleOp"> {
  let summary = "Move each function's repeated blocks into one function, "
                "called once per repetition";
  let description = [{
    A model's repeated blocks (GPT's `transformer.h.0` … `h.11`, LLaMA's
    `layers.*`) lower to the same ops again and again, one block after the
    other in the forward and, reversed, in the backward. Run on tensors
    before the CPU schedules, this pass finds in each function's body the
    longest run of equal consecutive segments (of the ops that do not
    compute from constants alone: constants, empty tensors, their fills and
    what else side-effect-free ops make of them stay outside), checks that
    every repetition computes the same thing from its own values (same ops
    and attributes, same wiring inside the segment; constants compared use
    by use, since CSE merges equal ones across layers), and moves the
    segment into a private function `@<function>_block` (`noinline`) called
    once per repetition. Its arguments are what a repetition reads from
    outside (a layer's parameters, the stream it continues) and the
    constants that differ between repetitions (each layer's dropout
    stream); constants they share are rebuilt inside. Its results are what
    any repetition's outside reads. Everything after it (schedules,
    bufferization, LLVM) then handles one block, whatever the depth.

    Repetitions a buffer leaves (a memref read after them) stay inline: a
    call would return the buffer, and deallocation would give the caller a
    copy of what may still be written (an asynchronous runtime call
    started inside). Lamina's own lowerings pass only handles and tensors
    between such a start and its wait.

    ```mlir
    func.func @f(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>)
        -> tensor<4xf32> {
      %0 = arith.mulf %x, %w0 : tensor<4xf32>
      %1 = math.tanh %0 : tensor<4xf32>
      %2 = arith.mulf %1, %w1 : tensor<4xf32>
      %3 = math.tanh %2 : tensor<4xf32>
      return %3 : tensor<4xf32>
    }
    // becomes (with min-ops=2)
    func.func @f(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>)
        -> tensor<4xf32> {
      %0 = call @f_block(%x, %w0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %1 = call @f_block(%0, %w1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    func.func private @f_block(%x: tensor<4xf32>, %w: tensor<4xf32>)
        -> tensor<4xf32> {
      %0 = arith.mulf %x, %w : tensor<4xf32>
      %1 = math.tanh %0 : tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"minOps", "min-ops", "unsigned", /*default=*/"16",
           "outline segments of at least this many ops">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def LaminaDeduplicateFunctions
    : Pass<"lamina-deduplicate-functions", "::mlir::ModuleOp"> {
  let summary = "Keep one of the private functions that are the same but "
                "for their names";
  let description = [{
    The loop nests lamina-outline-loop-nests gives functions of their own
    repeat with a model's repeated blocks: every layer of the same shapes
    has the same nests. This pass finds the private functions whose bodies,
    signatures and attributes are identical once their names and the
    module paths their ops carry (`lamina.module`, which name each layer)
    are set aside, keeps the first of each kind, points every call of the others
    at it and erases them: LLVM then optimises and generates each distinct
    nest once, whatever the depth. It compares the functions' printed forms
    (one print and one hash each) and rewrites the calls in one walk.

    ```mlir
    func.func @f(%a: memref<64xf32>, %b: memref<64xf32>) {
      call @f_nest0(%a) : (memref<64xf32>) -> ()
      call @f_nest1(%b) : (memref<64xf32>) -> ()
    }
    // @f_nest0 and @f_nest1 the same: @f_nest1 is erased and
      call @f_nest0(%b) : (memref<64xf32>) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def LaminaInternalizeFunctions
    : Pass<"lamina-internalize-functions", "::mlir::ModuleOp"> {
  let summary = "Give the entries behind the C interfaces and the private "
                "functions internal linkage";
  let description = [{
    A compiled program is entered through the C interfaces
    (`_mlir_ciface_<entry>`, which take pointers to memref descriptors);
    the functions they wrap and the private ones (the loop nests) are its
    own. Internal linkage tells LLVM so: the JIT makes no packed wrapper for
    them, and LLVM may drop the arguments a function never reads. That
    matters most for the call from a C interface to its entry, which takes
    every memref descriptor expanded into its fields: over a thousand
    arguments for a whole model's training step, exported, each passed by a
    store that LLVM's store-merging combine compared with the others
    (seconds of code generation). The entry is kept out of line
    (`no_inline`): inlined, the C interface became one function of the whole
    host code and a thousand descriptor loads, which took LLVM twice as long
    to generate. A public function without a C interface stays external: it
    is an entry of its own.

    ```mlir
    llvm.func @f(%p: !llvm.ptr, ...) { ... }
    llvm.func @_mlir_ciface_f(%d: !llvm.ptr) { ... llvm.call @f(...) ... }
    llvm.func @f_nest0(...) attributes {passthrough = ["noinline"],
                                        sym_visibility = "private"} { ... }
    // becomes
    llvm.func internal @f(%p: !llvm.ptr, ...) attributes {no_inline} { ... }
    llvm.func @_mlir_ciface_f(%d: !llvm.ptr) { ... }
    llvm.func internal @f_nest0(...) attributes {passthrough = ["noinline"]} { ... }
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LaminaDescriptorsByPointer
    : Pass<"lamina-descriptors-by-pointer", "::mlir::ModuleOp"> {
  let summary = "Let the entries behind the C interfaces take the "
                "descriptor pointers and read each field where it is used";
  let description = [{
    A C interface (`_mlir_ciface_<entry>`) takes a pointer to each memref
    descriptor, loads every descriptor and calls its entry with all of their
    fields: pointers, offset, sizes and strides. A whole model's training
    step has hundreds of tensors, so that call passed thousands of
    arguments, and LLVM's instruction selection and scheduling of the
    one-block entry that received them grew faster than the model's depth.
    This pass gives such an entry the interface's own arguments instead:
    each use of a field becomes an invariant load from the descriptor,
    placed right before its user (the host never changes a descriptor
    during a call). The interface then passes its arguments through, and
    its loads are erased.

    An entry is rewritten only when it is internal (after
    `lamina-internalize-functions`), nothing but its interface calls it,
    and every argument that call passes is an interface argument or a field
    of a descriptor loaded from one.

    ```mlir
    llvm.func internal @f(%alloc: !llvm.ptr, %data: !llvm.ptr, %offset: i64,
                          ...) { ... use %data ... }
    llvm.func @_mlir_ciface_f(%d: !llvm.ptr) {
      %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, ...)>
      %data = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, ptr, i64, ...)>
      ...
      llvm.call @f(%alloc, %data, %offset, ...)
    }
    // becomes
    llvm.func internal @f(%d: !llvm.ptr) {
      %field = llvm.getelementptr %d[0, 1] : (!llvm.ptr) -> !llvm.ptr, ...
      %data = llvm.load %field invariant : !llvm.ptr -> !llvm.ptr
      ... use %data ...
    }
    llvm.func @_mlir_ciface_f(%d: !llvm.ptr) {
      llvm.call @f(%d) : (!llvm.ptr) -> ()
    }
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LaminaDropUnusedArguments
    : Pass<"lamina-drop-unused-arguments", "::mlir::ModuleOp"> {
  let summary = "Drop the arguments an internal function never reads, at "
                "the function and at its calls";
  let description = [{
    func-to-llvm passes each memref as every field of its descriptor, but a
    function whose shapes are static reads only the aligned pointer: the
    sizes, strides, offset and allocated pointer are arguments nobody reads.
    A model's repeated block takes hundreds of them, and the entry that
    calls it once per layer loaded and passed them all, which LLVM's passes
    carried until its own dead-argument elimination. This pass drops them in
    MLIR, from internal and private functions that are only ever called
    directly (never an address taken); run after the canonicalizer has
    folded the descriptors the callee rebuilds from its arguments, and
    before one that erases what the callers computed for them.

    ```mlir
    llvm.func internal @block(%alloc: !llvm.ptr, %data: !llvm.ptr,
                              %offset: i64) { ... only %data used ... }
    llvm.call @block(%a, %d, %o) : (!llvm.ptr, !llvm.ptr, i64) -> ()
    // becomes
    llvm.func internal @block(%data: !llvm.ptr) { ... }
    llvm.call @block(%d) : (!llvm.ptr) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LaminaHalfFloatMasksAsIntegers
    : Pass<"lamina-half-float-masks-as-integers", "::mlir::ModuleOp"> {
  let summary = "Masked loads and stores of 16-bit floats as loads and "
                "stores of i16";
  let description = [{
    A partial tile of bf16 (or f16) values is read and written by LLVM's
    masked load and store intrinsics. An x86 CPU has no masked move of
    16-bit lanes before AVX-512, so LLVM splits them into one move per lane,
    and moves each bf16 lane out of its vector through f32 and back: a call
    to compiler-rt's `__truncsfbf2`, which the JIT's process does not have
    (a LLaMA layer under autocast on an AVX2 CPU did not link). The same
    bits moved as i16 lanes need no conversion.

    ```mlir
    llvm.intr.masked.store %v, %p, %mask {alignment = 2 : i32} : vector<16xbf16>, vector<16xi1> into !llvm.ptr
    // becomes
    %bits = llvm.bitcast %v : vector<16xbf16> to vector<16xi16>
    llvm.intr.masked.store %bits, %p, %mask {alignment = 2 : i32} : vector<16xi16>, vector<16xi1> into !llvm.ptr
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LaminaExpandCopies : Pass<"lamina-expand-copies"> {
  let summary = "Turn memref.copy into linalg.copy";
  let description = [{
    The LLVM lowering of a `memref.copy` between strided views calls the
    `memrefCopy` runtime function of upstream's C runner utilities. Rewriting
    copies as `linalg.copy` lets them compile to loops, so compiled programs
    need no MLIR runtime library on the host or in ahead-of-time artefacts.

    ```mlir
    memref.copy %a, %b : memref<2x4xf32, strided<[12, 3]>> to memref<2x4xf32>
    // becomes
    linalg.copy ins(%a : ...) outs(%b : ...)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def LaminaResultShapedAllocations
    : Pass<"lamina-result-shaped-allocations", "::mlir::func::FuncOp"> {
  let summary = "Allocate a tensor returned through a reshape in the "
                "result's shape";
  let description = [{
    A packed matmul computes its result as [M, N/16, 16] and the function
    returns it reshaped to [M, N]. Bufferized as is, the result lives in an
    allocation of the packed shape and buffer-results-to-out-params copies
    it, whole, into the caller's out-parameter. This pass follows a returned
    `tensor.collapse_shape` (or `expand_shape`) back through the destinations
    it was written into (linalg and vector writes, `tensor.insert_slice`,
    `scf.for` and `scf.forall` outputs) to the `tensor.empty` it started
    from, and makes that empty tensor the inverse reshape of one in the
    result's shape:

    ```mlir
    %e = tensor.empty() : tensor<64x4x16xf32>
    ... writes into %e ... -> %r
    %y = tensor.collapse_shape %r [[0], [1, 2]] : ... into tensor<64x64xf32>
    return %y
    // becomes
    %e0 = tensor.empty() : tensor<64x64xf32>
    %e = tensor.expand_shape %e0 [[0], [1, 2]] output_shape [64, 4, 16]
    ```

    After bufferization the reshapes of the allocation fold away and the
    allocation itself becomes the out-parameter: the result is written in
    place. Runs right before bufferization (canonicalization would fold the
    new reshape back into the empty tensor).
  }];
}

def LaminaDistinctResults : Pass<"lamina-distinct-results",
                                  "::mlir::func::FuncOp"> {
  let summary = "Give every result a function returns more than once a "
                "tensor of its own";
  let description = [{
    One-shot bufferization with results as caller-provided out-parameters
    needs one buffer per result: a value returned twice (`return %0, %0`,
    as CSE leaves two equal results) would alias two out-parameters, and
    upstream's buffer-results-to-out-params crashes on it. Each repetition
    after the first becomes a copy:

    ```mlir
    return %y, %y : tensor<4x8xf32>, tensor<4x8xf32>
    // becomes
    %copy = bufferization.alloc_tensor() copy(%y) : tensor<4x8xf32>
    return %y, %copy : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def LaminaElideResultCopies : Pass<"lamina-elide-result-copies",
                                     "::mlir::func::FuncOp"> {
  let summary = "Write a returned buffer straight into its out-parameter";
  let description = [{
    buffer-results-to-out-params writes a function's results into
    out-parameters the caller allocates. It rewrites the calls of the
    functions it changes only after every function's returns: a value a
    function returns from a call (the results of a block that
    lamina-outline-repeated-blocks outlined) is still the call's result
    when its return is rewritten, so it is copied into the out-parameter,
    and the call then writes it into a buffer allocated for it. This pass
    takes such a copy away: when the copy's source is an allocation of the
    same function and type, used only before the copy, and its target an
    out-parameter nothing else touches, the allocation's uses (the call)
    write the out-parameter instead.

    ```mlir
    %buffer = memref.alloc() : memref<64x768xf32>
    call @f_block(%x, %buffer) : (memref<64x768xf32>, memref<64x768xf32>) -> ()
    memref.copy %buffer, %out : memref<64x768xf32> to memref<64x768xf32>
    // becomes
    call @f_block(%x, %out) : (memref<64x768xf32>, memref<64x768xf32>) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // LAMINA_CODEGEN_PASSES_TD
