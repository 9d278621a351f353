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

    With `rope` (`lamina-cpu-pipeline{fuse-rope=true}`), a matmul whose
    result is only viewed as `[..., heads, head_dim]` (an expand_shape of its
    last dim) and rotated by an interleaved `lamina.rope` (LLaMA's queries
    and keys) gets the rotation as its epilogue: the projection writes the
    rotated value once.

    ```mlir
    %q = lamina.matmul "wq" %x, %w : ...
    %h = tensor.expand_shape %q [[0], [1], [2, 3]] ... into tensor<2x16x4x32xf32>
    %r = lamina.rope %h, %cos, %sin interleaved : ...
    // becomes
    %f = lamina.fused_linear "wq" %x, %w rope %cos, %sin : ...
    %r = tensor.expand_shape %f [[0], [1], [2, 3]] ...
    ```
  }];
  let options = [
    Option<"rope", "rope", "bool", /*default=*/"false",
           "fuse interleaved rotary embeddings into the matmul before them">,
  ];
  let dependentDialects = ["::mlir::lamina::LaminaDialect",
                           "::mlir::tensor::TensorDialect"];
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
    as stages, Lamina's runtime runs stage i on rank i — or on rank N − 1 − i
    in a function marked `lamina.pipeline_reversed` (a generated backward,
    whose first stage differentiates the forward's last). The cut may follow
    any op (a layer, a layer's last piece, an op of a generated backward).

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

def LaminaAutocast : Pass<"lamina-autocast"> {
  let summary = "Layer matmuls in bf16 with f32 master weights, as "
                "torch.autocast computes them";
  let description = [{
    `torch.autocast("cpu", dtype=torch.bfloat16)` runs its lower-precision
    ops (linear, matmul) on operands cast to bf16 and keeps parameters in
    f32. This pass does the same to every layer matmul whose float tensors
    are all f32 (the linear family, `fused_qkv`, `lamina.matmul`): its
    operands are `arith.truncf`'d to `element` (round to nearest even, as
    torch's cast), it computes in that type with f32 accumulation and its
    epilogue in f32, and rounds its results to it, as the eager op does;
    each result is `arith.extf`'d back to f32 for the ops after it, which
    compute in f32 (PyTorch's fp32 ops: softmax, norms, losses; and at
    least the eager precision of the others). A truncation of such a
    widening (one layer feeding the next) folds away.

    ```mlir
    %y = lamina.linear "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    // becomes
    %xb = arith.truncf %x : tensor<4x8xf32> to tensor<4x8xbf16>
    %wb = arith.truncf %w : tensor<16x8xf32> to tensor<16x8xbf16>
    %yb = lamina.linear "fc" %xb, %wb : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xbf16>
    %y = arith.extf %yb : tensor<4x16xbf16> to tensor<4x16xf32>
    ```

    Attention's plain matmuls (`linalg.batch_matmul`, and `linalg.matmul`
    in 2-D: eager's `torch.matmul`, also a lower-precision op) compute in
    f32 on operands rounded to `element` and widened back, and their
    results are rounded likewise: the numbers of a bf16 matmul with f32
    sums (products of bf16 values are exact in f32), with no narrow vectors
    in the loops between the layers.

    ```mlir
    %s = linalg.batch_matmul ins(%q, %kt : tensor<2x2x4xf32>, tensor<2x4x2xf32>) outs(%zeros : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    // becomes
    %ktb = arith.truncf %kt : tensor<2x4x2xf32> to tensor<2x4x2xbf16>
    %ktr = arith.extf %ktb : tensor<2x4x2xbf16> to tensor<2x4x2xf32>
    ... %qr likewise ...
    %s = linalg.batch_matmul ins(%qr, %ktr : tensor<2x2x4xf32>, tensor<2x4x2xf32>) outs(%zeros : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %sb = arith.truncf %s : tensor<2x2x2xf32> to tensor<2x2x2xbf16>
    %sf = arith.extf %sb : tensor<2x2x2xbf16> to tensor<2x2x2xf32>
    ```

    Reverse-mode differentiation of the result (lamina-generate-backward)
    runs the backward's matmuls in bf16 too, summing in f32 and rounding
    each cotangent once, and gives f32 gradients to the f32 parameters
    through the casts' rules, as eager autocast does.
  }];
  let options = [
    Option<"element", "element", "std::string", /*default=*/"\"bf16\"",
           "the lower precision: bf16 or f16">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def LaminaReduceReplicaGradients
    : Pass<"lamina-reduce-replica-gradients", "::mlir::ModuleOp"> {
  let summary = "Data parallelism: the gradients of a backward reduced over "
                "the replicas as soon as each is final";
  let description = [{
    Wraps the results of `function` numbered in `results` (a backward's
    parameter gradients, lamina-generate-backward) in
    `lamina.reduce_replicas`, placed right after the op that computes each:
    its reduction over the data-parallel replicas starts there and overlaps
    the rest of the backward. `mean` (the default) divides by the number of
    replicas, as DistributedDataParallel does: each replica's gradient of
    its batch's mean loss becomes the gradient of the global batch's mean
    loss. With `roots`, each sum goes to the replica named for its result
    only (the owner of the parameter's optimizer state under ZeRO stage 2).
    A result that is not a float tensor is an error.

    ```mlir
    %dw = lamina.matmul "fc" %dyT, %x : ...
    %0 = lamina.reduce_replicas %dw mean : tensor<16x8xf32>
    ... // the rest of the backward
    return %dx, %0
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "the function whose results are reduced">,
    ListOption<"results", "results", "int64_t",
               "the results to reduce (indices)">,
    ListOption<"roots", "roots", "int64_t",
               "per result, the replica the sum goes to (ZeRO stage 2), or "
               "-1 for every replica; empty: every replica for all">,
    Option<"mean", "mean", "bool", /*default=*/"true",
           "divide the sums by the number of replicas">,
    Option<"overlap", "overlap", "bool", /*default=*/"true",
           "start each reduction after its gradient's op; false: all of "
           "them at the end (to measure what the overlap hides)">,
  ];
}

def LaminaOutlineBlocks : Pass<"lamina-outline-blocks", "::mlir::ModuleOp"> {
  let summary = "One function per distinct block of a model's block list, "
                "called once per instance";
  let description = [{
    Runs on the scheduled program, before differentiation. The importer
    names each op by the PyTorch module computing it (`path`,
    `lamina.module`); an op's instance is its path up to the first numbered
    component (`transformer.h.3` of `transformer.h.3.attn.c_attn`, LLaMA's
    `layers.7`). Each instance's ops, contiguous in the body, are compared
    with the first instance of the same list, op by op and operand by
    operand: paths compared below the instance, active dropouts' offsets
    relative to the instance's first, the schedule's attributes
    (checkpoints, layouts) as they are. Equal instances, two or more, move
    into one private function `@<list>_block` (`lamina.block = "<list>"`),
    called once per instance (`lamina.module` = the instance) with that
    instance's values and parameters as arguments; the weights stay per
    instance. An instance with active dropouts passes its first dropout's
    offset as a last i64 argument, the block's dropouts their offset from
    it (`offset_base`): every instance draws the masks it drew inline. A
    pipeline cut after an instance's last op moves to its call; modules
    checkpointed whole (the caller's `lamina.checkpoint_modules`) are named
    on the block function, in its first instance. Values built from
    constants alone that several instances share (a folder made them once)
    are copied into each instance first, and values nothing reads dropped.

    In a program that shards values (a sharded argument, a sync point on
    more than one rank), instances are equal only where their inputs have
    the same layouts on every grid axis and their all_gather syncs left
    open (no `tensor_parallel_output_grad`) would transpose alike in the
    backward: layout inference, the gradient layout checks and
    `lamina-partition` take each block function once, for the layouts its
    calls pass. A layout error is reported here as `lamina-check-layouts`
    would report it.

    ```mlir
    // before: three equal instances h.0, h.1, h.2 in @forward
    %1 = lamina.linear "h.0.fc" %x, %w0 : ... {lamina.module = "h.0.fc"}
    ...
    // after
    %1 = func.call @h_block(%x, %w0) {lamina.module = "h.0"} : ...
    %2 = func.call @h_block(%1, %w1) {lamina.module = "h.1"} : ...
    %3 = func.call @h_block(%2, %w2) {lamina.module = "h.2"} : ...
    func.func private @h_block(...) attributes {lamina.block = "h"}
    ```
  }];
  let dependentDialects = ["::mlir::lamina::LaminaDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def LaminaInlineBlocks : Pass<"lamina-inline-blocks", "::mlir::ModuleOp"> {
  let summary = "Inline the calls of lamina-outline-blocks' block functions "
                "before code generation";
  let description = [{
    Replaces each call of a `lamina.block` function by the function's body,
    folds the call's constant dropout offset bases into the dropouts'
    offsets, and erases the block functions left uncalled. Code generation
    takes one function per program: partitioning, epilogue fusion and
    weight packing see every layer, and the CPU pipeline's
    `lamina-outline-repeated-blocks` shares the repeated layers again. The
    first pass of `lamina-host-prepare`.
  }];
  let dependentDialects = ["::mlir::lamina::LaminaDialect"];
}

def LaminaGenerateBackward : Pass<"lamina-generate-backward",
                                   "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation: a forward that keeps what the "
                "backward needs, and the backward function";
  let description = [{
    For the function `@f(args) -> results` named by `function`, after
    decomposing its layers into their pieces, adds

    - `@f_forward(args) -> (results..., saved...)`: the forward computation,
      also returning the intermediate values the backward needs;
    - `@f_backward(args..., saved..., cotangents...) -> gradients...`: one
      cotangent per result in, the gradient of every float tensor argument
      out (in argument order), computed by walking the forward in reverse
      and asking each op's `ReverseDifferentiableOpInterface` rule;
      cotangents of values used several times are summed. Arguments listed
      in `constants` (an input that does not require a gradient, a frozen
      parameter) get none: what only they would need (an input's
      `dX = dY·W`) is not computed.

    What the backward needs of the forward is the compiler's decision: the
    function's arguments are passed again (the caller holds them), every
    other value is saved by `@f_forward`, except in layers marked
    `lamina.checkpoint` (`transform.lamina.checkpoint`): their forward is
    recomputed inside the backward from their saved inputs, so only those
    inputs are kept. Dropout's backward regenerates the forward mask from
    the same Philox stream. The module records the pair as
    `lamina.training = {f = {forward = @f_forward, backward = @f_backward,
    saved = N, gradients = array<i64: argument indices>}}`.

    An op without a rule on the path from an argument to a result is an
    error naming it.

    A sharded program (world size > 1, not yet partitioned) is checked
    first (`lamina-check-gradient-layouts`: a gradient left as partial sums
    is an error naming the layer and the missing sync), then partitioned
    (`lamina-partition`) and differentiated rank by rank: each collective's
    rule applies its backward collective (the spec's §3 table: a fwd_post
    all_reduce becomes the identity, all_gather a reduce_scatter or a split,
    reduce_scatter and scatter an all_gather, a bwd_post sync an
    all_reduce). The three functions are one rank's: sharded arguments,
    saved values and cotangents have per-rank types. `@f_backward` returns
    for a parameter this rank's block of its gradient (a replicated
    parameter's partial sums all-reduced) and for an input the whole
    gradient (a sharded input's blocks all-gathered).

    A program cut into pipeline stages (`lamina.pipeline_cut`) gets a
    backward of as many stages in reverse order: a cut follows the last op
    differentiating each forward stage, and `lamina.pipeline_reversed` on
    `@f_backward` has lamina-split-pipeline-stages run its stage i of N on
    rank N - 1 - i, where the forward's stage N - 1 - i ran. A sharded
    program with cuts (tensor parallelism inside the stages) is partitioned
    with its cuts first, and each rank's backward gets the same stages.

    Blocks: a call of a block function (`lamina.block`, made by
    lamina-outline-blocks) is differentiated through the block's own pair,
    made once for all its calls: `@<block>_forward` (its results, then what
    its backward needs) and `@<block>_backward` (its arguments, those
    values and one cotangent per result → the gradients of its float
    arguments). The program's forward calls the first and saves what it
    returns; its backward calls the second, in reverse. In a sharded
    program each block is checked and partitioned once, for the layouts its
    calls pass (the same at every call), and its pair is one rank's, with
    the collectives partitioning made.

    ```mlir
    func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
      %y = lamina.linear "fc" %x, %w : ...
      return %y : tensor<4x16xf32>
    }
    // gives
    func.func @f_backward(%x, %w, %dy: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
      %dx = lamina.matmul "fc" %dy, %wT   // wT = transpose(%w)
      %dw = lamina.matmul "fc" %dyT, %xT  // dW = dyᵀ·x
      return %dx, %dw
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "the function to differentiate">,
    ListOption<"constants", "constants", "int64_t",
               "arguments held constant (indices): no gradient is returned "
               "for one, and nothing is computed for it">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::shard::ShardDialect", "::mlir::tensor::TensorDialect",
    // The module's lamina.training records #lamina.training_pair.
    "::mlir::lamina::LaminaDialect",
  ];
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
    - fork_rng on a replicated value;
    - a call passing a function other layouts than its earlier calls (the
      function is inferred and partitioned once, for the layouts its calls
      pass; what it returns takes the layouts it computes).

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

def LaminaCheckGradientLayouts
    : Pass<"lamina-check-gradient-layouts", "::mlir::ModuleOp"> {
  let summary = "Reject sharded programs whose backward would leave a "
                "gradient as partial sums";
  let description = [{
    Walks each function of a program with `lamina.world_size > 1` in
    reverse with the transposed layout rules (the backward column of the
    spec's sync table): a column-parallel matmul makes its input gradient
    partial (P) on each rank, a row-parallel one makes it S(last), a
    `bwd_post` all-reduce turns P into R, a forward all-gather transposes to
    a reduce-scatter (or a split with `tensor_parallel_output_grad =
    false`). Rejected, naming the layer and the missing sync:

    - a partial gradient summed with a whole one (a residual around a
      column-parallel layer without `sync("bwd_post", "all_reduce")`);
    - a partial gradient reaching a program input;
    - a backward collective on a gradient of the wrong layout (a `bwd_post`
      all-reduce of a gradient every rank already holds whole).

    Parameters replicated across ranks may receive partial gradients (a
    LayerNorm under sequence parallelism): they are all-reduced as
    parameter gradients. Forward layouts come from the same inference as
    lamina-check-layouts, whose errors come first.

    A call is walked through the function it calls, from the gradients of
    its results there, once per call; its arguments' gradients join the
    call's operands'. Calls whose gradients would transpose a sync of the
    function differently (an all_gather left open) are an error: the
    function is partitioned once.

    ```mlir
    // Megatron MLP without fc1's bwd_post sync:
    // error: 'func.func' op the gradient of argument 0 would be partial sums
    // (layout P) on each rank, coming from layer 'fc1'; add
    // sync("bwd_post", "all_reduce") on the input of layer 'fc1'
    ```

    An argument named in `constants` gets no gradient (an input that does
    not require one): a partial gradient reaching it is not computed, and
    not an error.
  }];
  let options = [
    ListOption<"constants", "constants", "int64_t",
               "indices of the arguments that get no gradient">,
  ];
}

def LaminaRecordResultLayouts
    : Pass<"lamina-record-result-layouts", "::mlir::ModuleOp"> {
  let summary = "Write the inferred layout of every sharded function result "
                "onto the signature";
  let description = [{
    A host calling a multi-rank program must know which results each rank
    returns only a block of. lamina-partition records that on the results it
    rewrites; this pass records the same before partitioning, from the
    layout inference of lamina-check-layouts (and rejects what it rejects),
    so that the host reads the whole signature from attributes. Part of
    `lamina-host-prepare`.

    ```mlir
    // before
    func.func @f(...) -> tensor<8x64xf32>
    // after: the result is the reduce-scattered output of a layer
    func.func @f(...) -> (tensor<8x64xf32> {lamina.layout = #lamina.layout<S(0)>})
    ```
  }];
}

def LaminaRecordModulePaths : Pass<"lamina-record-module-paths"> {
  let summary = "Turn the importer's name locations (module paths) into "
                "lamina.module attributes";
  let description = [{
    The Python importer gives each op of a submodule's forward the module's
    path as its location (`sch.mlir()` prints them); locations do not
    survive printing, so this pass moves each name into a `lamina.module`
    attribute, which `transform.lamina.checkpoint_module` reads. Lamina's
    Python package does it whenever it parses; run it first when replaying
    `sch.mlir()` and `sch.transform_script()` with lamina-opt.

    ```mlir
    // before
    %0 = arith.mulf %x, %x : tensor<4x8xf32> loc("h.0.norm")
    // after
    %0 = arith.mulf %x, %x {lamina.module = "h.0.norm"} : tensor<4x8xf32>
    ```
  }];
}

def LaminaPartition : Pass<"lamina-partition", "::mlir::ModuleOp"> {
  let summary = "Turn a checked sharded program into one rank's SPMD program";
  let description = [{
    For a module with `lamina.world_size = N > 1` whose layers are
    decomposed (lamina-decompose), infers and checks every value's layout
    (as lamina-check-layouts does) and rewrites the program into what one
    rank computes on a 1-D `shard.grid` of N processes. On a device grid
    (`lamina.grid = {dp = D, pp = P, tp = N}`) the program is cut along the
    tensor axis alone, by its N ranks, on a `shard.grid` of every axis in
    `lamina.grid`'s order whose collectives and rank name the `tp` axis; on
    the other axes the program is one replica's or one stage's, and an
    argument sharded over them is refused.

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
    - a fused QKV sharded by heads produces `num_heads / N` heads;
    - a function the program calls (a `lamina.block` of
      lamina-outline-blocks) is partitioned once, for the layouts its calls
      pass into its arguments, which must be the same at every call (a call
      passing others is an error naming the earlier call); the calls take
      its results at their per-rank shapes.

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

#endif // LAMINA_LAMINA_TRANSFORMS_PASSES_TD
