//===- Passes.td - Transformations of the lamina dialect ---*- tablegen -*-===//

#ifndef LAMINA_LAMINA_TRANSFORMS_PASSES_TD
#define LAMINA_LAMINA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LaminaDecompose : Pass<"lamina-decompose"> {
  let summary = "Split layer ops into matmul, sync, bias add, activation and "
                "dropout (Slapo's decompose)";
  let description = [{
    Rewrites every linear layer (`lamina.linear`, `linear_separate_bias`,
    `linear_sync`, `linear_act`, `linear_dropout`, `fused_linear`) into the
    primitive ops it computes, in the spec's order, each keeping the layer's
    path. This exposes the bias add so that schedules can move it after a
    sync, and gives epilogue fusion a uniform input.

    ```mlir
    %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh : ...
    // becomes
    %0 = lamina.matmul "fc" %x, %w : ...
    %1 = lamina.bias_add "fc" %0, %b : ...
    %y = lamina.activation "fc" gelu_tanh %1 : ...
    ```
  }];
  let dependentDialects = ["::mlir::lamina::LaminaDialect"];
}

def LaminaFuseEpilogues : Pass<"lamina-fuse-epilogues"> {
  let summary = "Fuse matmul → [sync] → bias → activation → dropout chains "
                "into lamina.fused_linear";
  let description = [{
    Starting at each `lamina.matmul`, absorbs the longest chain of
    single-use successors that follows the spec's epilogue order: an
    optional `fwd_post` sync, an optional bias add, an optional activation,
    an optional dropout. A value with a second use ends the chain (its
    other users need it unfused), as does any op out of order. A matmul
    with nothing to absorb is left alone.

    ```mlir
    %0 = lamina.matmul "fc" %x, %w : ...
    %1 = lamina.bias_add "fc" %0, %b : ...
    %2 = lamina.activation "fc" gelu_tanh %1 : ...
    // becomes
    %2 = lamina.fused_linear "fc" %x, %w bias %b activation gelu_tanh : ...
    ```
  }];
  let dependentDialects = ["::mlir::lamina::LaminaDialect"];
}

def LaminaMaterializeLazyWeights : Pass<"lamina-materialize-lazy-weights",
                                         "::mlir::ModuleOp"> {
  let summary = "Fix the in_features of lazy layers from their inputs "
                "(LazyLinear, LNSLazyLinear)";
  let description = [{
    A lazy layer's weight is a function argument `[out, ?]` whose input
    width is unknown until the first input fixes it. This pass takes the
    width from each layer's static input and gives the weight argument that
    static shape, so that the rest of the compiler sees an ordinary layer. A
    weight used by inputs of two different widths is an error, as a later
    call with another width is in PyTorch.

    ```mlir
    func.func @f(%x: tensor<4x17x!lns.num<f = 10>>, %w: tensor<8x?x!lns.num<f = 10>>)
    // becomes
    func.func @f(%x: tensor<4x17x!lns.num<f = 10>>, %w: tensor<8x17x!lns.num<f = 10>>)
    ```
  }];
}

def LaminaSplitPipelineStages : Pass<"lamina-split-pipeline-stages",
                                      "::mlir::ModuleOp"> {
  let summary = "Split functions into pipeline stages after the layers "
                "marked by cut_pipeline_stage";
  let description = [{
    A function whose body holds layers marked `lamina.pipeline_cut` becomes
    stage functions `@f_stage0 … @f_stageN` (attribute
    `lamina.pipeline_stage = i`): stage i runs the ops after cut i−1 up to
    and including cut i, takes the function arguments it uses and the
    values earlier stages define that it or a later stage uses (passing the
    latter through, so stages exchange values with their neighbours only),
    and returns those that later stages use. `@f` calls the stages in
    order, so the single-process program is unchanged; on as many MPI ranks
    as stages, Lamina's runtime runs stage i on rank i.

    ```mlir
    func.func @f(%x) { %h = lamina.linear "a" ... {lamina.pipeline_cut}
                       %y = lamina.linear "b" %h ... ; return %y }
    // becomes
    func.func @f_stage0(%x) -> %h     func.func @f_stage1(%h) -> %y
    func.func @f(%x) { %h = call @f_stage0(%x); %y = call @f_stage1(%h) ... }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def LaminaApplySchedule : Pass<"lamina-apply-schedule", "::mlir::ModuleOp"> {
  let summary = "Apply a schedule file (transform.lamina script) to the module";
  let description = [{
    Reads `schedule` — a module with `transform.with_named_sequence` whose
    `@__transform_main` holds `transform.lamina.*` primitives — and applies
    it with the transform interpreter, as lamina-run --schedule and
    `--transform-preload-library` + `--transform-interpreter` do:

    ```sh
    lamina-opt model.mlir --lamina-apply-schedule=schedule=megatron.mlir
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"",
           "path of the schedule file">,
  ];
}

def LaminaCheckLayouts : Pass<"lamina-check-layouts", "::mlir::ModuleOp"> {
  let summary = "Infer R / S(axis) / P layouts of a sharded program and "
                "reject what the spec calls errors";
  let description = [{
    Starting from the layouts declared on function arguments (replicated
    when none), propagates a layout to every value of a program with
    `lamina.world_size > 1`: a column-parallel matmul (weight S(0)) turns a
    replicated input into S(last), a row-parallel one (weight S(1)) turns an
    S(last) input into partial sums P, and syncs change layouts as the
    spec's table says. Rejected, with a diagnostic naming the op, the value
    and the missing sync:

    - a P value reaching a bias add, an activation, a dropout, any other
      non-linear op or the function's results (Slapo's double-bias bug is
      a row-parallel bias added before the all-reduce);
    - a sync whose input has the wrong layout (all_reduce and
      reduce_scatter need P, all_gather needs S on its axis, scatter R);
    - a column-parallel layer whose bias is not sharded with its weight, a
      row-parallel layer whose input is not sharded on its last axis;
    - fork_rng on a replicated value.

    ```mlir
    // fc2 is row parallel; without `sync <fwd_post, all_reduce>` its bias
    // would be added to each rank's partial sum:
    %y = lamina.linear "fc2" %h, %w2 bias %b2 : ...
    // error: 'lamina.linear' op adds its bias to partial sums (layout P) ...
    ```

    With `annotate`, the inferred map is written onto the program (for
    reading, not for later passes): every op with tensor results gets
    `lamina.result_layouts` (one layout per result), and every sync
    `lamina.backward`, the collective its transpose applies to the gradient
    (`"identity"`, `"all_reduce"`, `"reduce_scatter axis = 1"`, ...).
  }];
  let options = [
    Option<"annotate", "annotate", "bool", /*default=*/"false",
           "write the inferred layouts and each sync's backward collective "
           "onto the ops">,
  ];
}

def LaminaPartition : Pass<"lamina-partition", "::mlir::ModuleOp"> {
  let summary = "Turn a checked sharded program into one rank's SPMD program";
  let description = [{
    For a module with `lamina.world_size = N > 1` whose layers are
    decomposed (lamina-decompose), infers and checks every value's layout
    (as lamina-check-layouts does) and rewrites the program into what one
    rank computes on a 1-D `shard.grid` of N processes:

    - sharded arguments, and every value computed from them, get per-rank
      shapes (axis `a` of an S(a) value divided by N); the argument keeps
      its `lamina.layout`, and sharded results get one, so that the host
      hands each rank its block of the whole tensors and knows which block
      a rank returns;
    - sync points become collectives on the grid: `all_reduce` →
      `shard.all_reduce`, `all_gather` → `shard.all_gather`,
      `reduce_scatter` → `shard.reduce_scatter`, Slapo's `scatter` (keep
      your own block) → `shard.all_slice`; `bwd_post` syncs, the identity
      in the forward pass, disappear;
    - a dropout on a sharded value draws each element by its index in the
      whole tensor (`shard_axis`, `shards` and the process's rank), so each
      rank's mask is its block of the unsharded mask; a `fork_rng` dropout
      gets the rank that keys its stream;
    - a fused QKV sharded by heads produces `num_heads / N` heads.

    The module is marked `lamina.partitioned`; a module of one rank is left
    alone.

    ```mlir
    module attributes {lamina.world_size = 2 : i64} {
      func.func @f(%h: tensor<4x16xf32> {lamina.layout = #lamina.layout<S(1)>},
                   %w: tensor<8x16xf32> {lamina.layout = #lamina.layout<S(1)>}) {
        %0 = lamina.matmul "fc2" %h, %w : ... -> tensor<4x8xf32>
        %1 = lamina.sync "fc2" %0 <fwd_post, all_reduce> : tensor<4x8xf32>
    // becomes
    module attributes {lamina.partitioned, lamina.world_size = 2 : i64} {
      shard.grid @lamina_grid(shape = 2)
      func.func @f(%h: tensor<4x8xf32> {...}, %w: tensor<8x8xf32> {...}) {
        %0 = lamina.matmul "fc2" %h, %w : ... -> tensor<4x8xf32>
        %1 = shard.all_reduce %0 on @lamina_grid grid_axes = [0] : ...
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Code generation helpers
//===----------------------------------------------------------------------===//

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
    (`linalg.pack` of a block argument), this pass creates
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
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LaminaCpuTileAndVectorize : Pass<"lamina-cpu-tile-and-vectorize",
                                      "::mlir::ModuleOp"> {
  let summary = "Tile each packed matmul with its epilogue for caches and "
                "registers, and vectorize the tile";
  let description = [{
    For every `lamina.stage = "epilogue"` op fed by a packed matmul (the
    `(m, n1, n0, k)` generic of `convert-lamina-to-linalg{weight-block=16}`),
    or a packed matmul without an epilogue, this pass picks tile sizes from
    the static shapes and applies a transform-dialect schedule:

    1. fuse the epilogue with the matmul and its fill into a cache-level
       tile (256×16 blocks of 16 features for M ≥ 1024, 128×2 for M ≥ 256);
    2. fuse again into a 4×16 register tile (rows are fewer when M is not a
       multiple of 4);
    3. tile K by 4 and vectorize the matmul, the fill and the epilogue;
    4. hoist the accumulator out of the K loop, so that it lives in
       registers and the epilogue (bias, GELU, dropout) is applied to it
       before the output tile is written once.

    Other element-wise ops (residual adds, a bias add or activation that was
    not fused, the epilogue of an unpacked matmul) whose last dimension is a
    multiple of 16 are tiled into rows of 16 lanes and vectorized. Ops whose
    shapes do not allow a clean schedule (dynamic, or a large odd K) are left
    to the loop lowering.

    With `threads=N > 1`, the cache-level tiles form an `scf.forall` (the
    matmul and its fill fused into it), which the pipeline runs on N
    threads through OpenMP.
  }];
  let options = [
    Option<"threads", "threads", "unsigned", /*default=*/"1",
           "threads sharing the cache-level tiles">,
  ];
  let dependentDialects = ["::mlir::transform::TransformDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
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

#endif // LAMINA_LAMINA_TRANSFORMS_PASSES_TD
