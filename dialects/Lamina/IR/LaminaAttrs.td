//===- LaminaAttrs.td - Attributes of the lamina dialect ---*- tablegen -*-===//

#ifndef LAMINA_LAMINA_ATTRS_TD
#define LAMINA_LAMINA_ATTRS_TD

include "Lamina/IR/LaminaDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Lamina_ActGeluTanh : I32EnumAttrCase<"gelu_tanh", 0>;
def Lamina_ActGeluErf : I32EnumAttrCase<"gelu_erf", 1>;
def Lamina_ActRelu : I32EnumAttrCase<"relu", 2>;
def Lamina_ActSilu : I32EnumAttrCase<"silu", 3>;
def Lamina_ActSigmoid : I32EnumAttrCase<"sigmoid", 4>;
def Lamina_ActivationKindEnum : I32EnumAttr<"ActivationKind",
    "element-wise activation function",
    [Lamina_ActGeluTanh, Lamina_ActGeluErf, Lamina_ActRelu, Lamina_ActSilu,
     Lamina_ActSigmoid]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}
def Lamina_ActivationKindAttr
    : EnumAttr<Lamina_Dialect, Lamina_ActivationKindEnum, "activation"> {
  let summary = "`gelu_tanh` (Slapo's \"gelu\" and \"gelu_new\"), `gelu_erf` "
                "(nn.GELU()), `relu`, `silu` (x·σ(x), LLaMA's MLP) or "
                "`sigmoid` (σ(x) = 1 / (1 + exp(−x)))";
}

def Lamina_RopeInterleaved : I32EnumAttrCase<"interleaved", 0>;
def Lamina_RopeHalves : I32EnumAttrCase<"halves", 1>;
def Lamina_RopePairsEnum : I32EnumAttr<"RopePairs",
    "which elements of the last dim a rotary embedding rotates together",
    [Lamina_RopeInterleaved, Lamina_RopeHalves]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}
def Lamina_RopePairsAttr
    : EnumAttr<Lamina_Dialect, Lamina_RopePairsEnum, "rope_pairs"> {
  let summary = "`interleaved` (elements 2i and 2i + 1, LLaMA's reference "
                "code) or `halves` (elements i and i + D/2, the rotate-half "
                "form)";
}

def Lamina_SyncFwdPre : I32EnumAttrCase<"fwd_pre", 0>;
def Lamina_SyncFwdPost : I32EnumAttrCase<"fwd_post", 1>;
def Lamina_SyncBwdPost : I32EnumAttrCase<"bwd_post", 2>;
def Lamina_SyncModeEnum : I32EnumAttr<"SyncMode",
    "where a sync point acts (Slapo's sync modes)",
    [Lamina_SyncFwdPre, Lamina_SyncFwdPost, Lamina_SyncBwdPost]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}

def Lamina_CollAllReduce : I32EnumAttrCase<"all_reduce", 0>;
def Lamina_CollAllGather : I32EnumAttrCase<"all_gather", 1>;
def Lamina_CollReduceScatter : I32EnumAttrCase<"reduce_scatter", 2>;
def Lamina_CollScatter : I32EnumAttrCase<"scatter", 3>;
def Lamina_CollectiveKindEnum : I32EnumAttr<"CollectiveKind",
    "collective of a sync point",
    [Lamina_CollAllReduce, Lamina_CollAllGather, Lamina_CollReduceScatter,
     Lamina_CollScatter]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}

def Lamina_LayoutR : I32EnumAttrCase<"replicated", 0, "R">;
def Lamina_LayoutS : I32EnumAttrCase<"sharded", 1, "S">;
def Lamina_LayoutP : I32EnumAttrCase<"partial", 2, "P">;
def Lamina_LayoutKindEnum : I32EnumAttr<"LayoutKind",
    "distribution of a value over the device grid",
    [Lamina_LayoutR, Lamina_LayoutS, Lamina_LayoutP]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}

def Lamina_StageMatmul : I32EnumAttrCase<"matmul", 0>;
def Lamina_StageEpilogue : I32EnumAttrCase<"epilogue", 1>;
def Lamina_StagePairPartners : I32EnumAttrCase<"pair_partners", 2>;
def Lamina_LoweredStageEnum : I32EnumAttr<"LoweredStage",
    "the role of a lowered linalg op in its layer's loop nest",
    [Lamina_StageMatmul, Lamina_StageEpilogue, Lamina_StagePairPartners]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}
def Lamina_LoweredStageAttr
    : EnumAttr<Lamina_Dialect, Lamina_LoweredStageEnum, "stage"> {
  let summary = "`matmul` (a layer's matmul), `epilogue` (the element-wise "
                "op after it) or `pair_partners` (a rotary epilogue's "
                "partner elements), which the code-generation pipelines "
                "fuse into one loop nest";
}

def Lamina_LoopElementwise : I32EnumAttrCase<"elementwise", 0>;
def Lamina_LoopRowReduction : I32EnumAttrCase<"row_reduction", 1>;
def Lamina_LoopColumnSum : I32EnumAttrCase<"column_sum", 2>;
def Lamina_LoopRowTranspose : I32EnumAttrCase<"row_transpose", 3>;
def Lamina_LoopMatmul : I32EnumAttrCase<"matmul", 4>;
def Lamina_LoopScheduleEnum : I32EnumAttr<"LoopSchedule",
    "the CPU schedule of an op between layers",
    [Lamina_LoopElementwise, Lamina_LoopRowReduction, Lamina_LoopColumnSum,
     Lamina_LoopRowTranspose, Lamina_LoopMatmul]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::lamina";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Lamina_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Lamina_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Lamina_SyncAttr : Lamina_Attr<"Sync", "sync"> {
  let summary = "a sync point: mode, collective and axis";
  let description = [{
    Slapo's `.sync(mode, op, axis=…, tensor_parallel_output_grad=…)`. The
    legal combinations are those of the spec: `fwd_post` with any
    collective, `fwd_pre` with `all_gather`, `bwd_post` with `all_reduce`.
    `all_gather`, `reduce_scatter` and `scatter` need an axis, `all_reduce`
    takes none.

    The backward of an `all_gather` reduce-scatters a partial gradient
    (`tensor_parallel_output_grad = true`) or keeps this rank's block of a
    gradient whole on every rank (`false`). Without the parameter, backward
    generation derives which from the gradient's layout; with it, the
    gradient layout check holds the program to it.

    ```mlir
    #lamina.sync<fwd_post, all_reduce>
    #lamina.sync<fwd_pre, all_gather, axis = 1>
    #lamina.sync<fwd_post, all_gather, axis = 1, tensor_parallel_output_grad = false>
    ```
  }];
  let parameters = (ins
    EnumParameter<Lamina_SyncModeEnum>:$mode,
    EnumParameter<Lamina_CollectiveKindEnum>:$collective,
    OptionalParameter<"std::optional<int64_t>">:$axis,
    OptionalParameter<"std::optional<bool>">:$tensorParallelOutputGrad);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lamina_DropoutAttr : Lamina_Attr<"Dropout", "dropout"> {
  let summary = "dropout configuration: probability, mode and RNG offset";
  let description = [{
    `p` is the probability of zeroing an element (survivors are scaled by
    `1/(1-p)`); `training` is fixed when the program is imported or built;
    `offset` selects this op's stream of the counter-based generator (unique
    per dropout op); `fork_rng` keys the stream by rank (Megatron style)
    instead of drawing masks by global element index.

    After partitioning, a dropout on a value sharded over `shards` ranks on
    `shard_axis` still draws each element by its index in the whole tensor
    (the op's rank operand locates the block), so that every rank's mask is
    its block of the unsharded mask.

    ```mlir
    #lamina.dropout<p = 0.1, training>
    #lamina.dropout<p = 0.1, training, offset = 3>
    #lamina.dropout<p = 0.1, training, shard_axis = 1, shards = 2>
    #lamina.dropout<p = 0.5>                 // eval mode: identity
    ```
  }];
  let parameters = (ins APFloatParameter<"probability">:$p, "bool":$training,
                    "uint64_t":$offset, "bool":$forkRng,
                    OptionalParameter<"std::optional<int64_t>">:$shardAxis,
                    DefaultValuedParameter<"int64_t", "1">:$shards);
  let builders = [
    AttrBuilder<(ins "llvm::APFloat":$p, "bool":$training, "uint64_t":$offset,
                     "bool":$forkRng), [{
      return $_get($_ctxt, p, training, offset, forkRng, std::nullopt, 1);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether this dropout changes its input (training with p > 0).
    bool isActive() const;
    double getProbability() const { return getP().convertToDouble(); }
    /// This dropout drawing its mask at counter offset `offset`.
    DropoutAttr withOffset(uint64_t offset) const;
  }];
}

def Lamina_LayoutAttr : Lamina_Attr<"Layout", "layout"> {
  let summary = "distribution of a value: R, S(axis) or P";
  let description = [{
    `R`: every rank holds the whole tensor. `S(a)`: rank r holds the r-th
    contiguous block of axis `a`. `S(a, groups = g)`: axis `a` is `g` equal
    groups (a fused `[Q; K; V]` projection's 3, or the batch of a batch
    matmul over `[B · heads]`), and rank r holds the r-th contiguous block
    of each group, so that splitting the groups apart leaves each sharded.
    `P`: every rank holds a full-shaped tensor whose sum over ranks is the
    value.

    ```mlir
    func.func @f(%w: tensor<64x16xf32> {lamina.layout = #lamina.layout<S(0)>})
    func.func @g(%qkv: tensor<96x32xf32> {lamina.layout = #lamina.layout<S(0, groups = 3)>})
    ```
  }];
  let parameters = (ins EnumParameter<Lamina_LayoutKindEnum>:$kind,
                    OptionalParameter<"std::optional<int64_t>">:$axis,
                    DefaultValuedParameter<"int64_t", "1">:$groups);
  let builders = [
    AttrBuilder<(ins "::mlir::lamina::LayoutKind":$kind,
                     "std::optional<int64_t>":$axis), [{
      return $_get($_ctxt, kind, axis, 1);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lamina_GridLayoutAttr : Lamina_Attr<"GridLayout", "layout"> {
  let summary = "distribution of a value over a device grid: a layout per axis";
  let description = [{
    A value's layout on each named axis of a device grid of several axes
    (`lamina.grid`, e.g. `{dp = 2, tp = 4}`): `R`, `S(a)` or `P` on each,
    `R` on the axes not named. Schedules' syncs act on the tensor axis `tp`,
    replica reductions (`lamina.reduce_replicas`) on the data axis `dp`;
    layout rules apply per axis. The one-axis spelling `#lamina.layout<S(0)>`
    is the layout on `tp`, replicated on every other axis.

    The list is canonical as printed: sorted by axis, replicated axes left
    out, and a list naming no axis but `tp` printed in the one-axis
    spelling (so `[tp: S(0), dp: R]` prints `S(0)`). Two axes never shard
    the same tensor dim.

    ```mlir
    func.func @f(%x: tensor<8x16xf32> {lamina.layout = #lamina.layout<[dp: S(0), tp: S(1)]>})
    ```
  }];
  // Spelled `#lamina.layout<[...]>` (LayoutAttr's parser reads both forms);
  // registered under a name of its own.
  let attrName = "lamina.grid_layout";
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr", "">:$axes,
                    ArrayRefParameter<"::mlir::lamina::LayoutAttr", "">:$layouts);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The layout on `axis` (R where the list does not name it).
    LayoutAttr getLayoutOn(::llvm::StringRef axis) const;
  }];
}

def Lamina_TrainingPairAttr : Lamina_Attr<"TrainingPair", "training_pair"> {
  let summary = "the forward / backward pair differentiating a function";
  let description = [{
    What `lamina-generate-backward` made of a function, recorded under its
    name in the module's `lamina.training` dictionary, and what runtimes
    call: `forward` (the function's results, then the `saved` values the
    backward needs), `backward` (the function's arguments, the saved
    values, one cotangent per result; a gradient for each argument numbered
    in `gradients`, in that order).

    ```mlir
    module attributes {lamina.training = {main = #lamina.training_pair<
        forward = @main_forward, backward = @main_backward, saved = 1,
        gradients = [0, 1, 2]>}}
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$forward,
                    "::mlir::FlatSymbolRefAttr":$backward,
                    "int64_t":$saved,
                    ArrayRefParameter<"int64_t", "">:$gradients);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lamina_PackedWeightsAttr : Lamina_Attr<"PackedWeights", "packed_weights"> {
  let summary = "the weights a function takes packed, and what they are packed from";
  let description = [{
    `lamina-hoist-weight-packing` moves the packing of a function's weights
    into `@f_pack_weights` and gives `@f` the packed weights as trailing
    arguments instead: their types, in order, and for each the number of
    the argument of `@f` it is packed from. A call whose packed arguments
    are unchanged reuses the packed weights. Recorded under the function's
    name in the module's `lamina.weight_packing`.

    ```mlir
    module attributes {lamina.weight_packing = {main =
        #lamina.packed_weights<[tensor<2x8x16xf32>] from [1]>}}
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::Type", "">:$types,
                    ArrayRefParameter<"int64_t", "">:$sources);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lamina_CpuTilesAttr : Lamina_Attr<"CpuTiles", "cpu_tiles"> {
  let summary = "the cache and register tiles of a layer's matmul on a CPU";
  let description = [{
    The tile plan `lamina-select-cpu-strategy` chooses for a packed matmul
    of `M` rows, `N/16` blocks of 16 features and depth `K` (steps of `k`
    are pairs with `k_group = 2`), which `lamina-cpu-tile-and-vectorize`
    applies (0 everywhere means "not tiled"):

    - `cache_rows` × `cache_blocks`: the cache-level tile, blocks outer;
    - `slab_rows`: the cache tiles run over slabs of this many rows, one
      after the other;
    - `register_rows` × `register_blocks`: the register tile (0 rows: the
      rows left are one tile; 0 blocks: all of the cache tile's);
    - `k_step`: k in steps of this many, the accumulators in registers;
    - `k_chunk`: without cache tiles, the register tiles of a group of
      blocks run in turn over chunks of this many k;
    - `thread_blocks`: each thread runs the plan on its part of this many
      blocks.

    ```mlir
    #lamina.cpu_tiles<cache_rows = 128, cache_blocks = 8, register_rows = 4,
                      register_blocks = 1, k_step = 4>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "0">:$cache_rows,
                    DefaultValuedParameter<"int64_t", "0">:$cache_blocks,
                    DefaultValuedParameter<"int64_t", "0">:$slab_rows,
                    DefaultValuedParameter<"int64_t", "0">:$register_rows,
                    DefaultValuedParameter<"int64_t", "0">:$register_blocks,
                    DefaultValuedParameter<"int64_t", "0">:$k_step,
                    DefaultValuedParameter<"int64_t", "0">:$k_chunk,
                    DefaultValuedParameter<"int64_t", "0">:$thread_blocks);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Lamina_CpuLoopTilesAttr : Lamina_Attr<"CpuLoopTiles", "cpu_loop_tiles"> {
  let summary = "the CPU schedule of an op between layers and its tiles";
  let description = [{
    What `lamina-select-cpu-loop-tiles` chooses for a linalg op between
    the layers (under its `lamina.codegen`), from its static shape, and
    `lamina-cpu-tile-and-vectorize` applies:

    - `elementwise`: tiles of `tile_sizes` (0: the dim is not tiled),
      vectorized; where a tile does not divide its extent, the last tile is
      partial and vectorized with masks at `vector_sizes`;
    - `row_reduction`: rows of `tile_sizes`, each row's reduction split
      into lanes accumulated in registers (`vector_sizes` as above);
    - `column_sum`: float sums over every dim but the last, in tiles;
    - `row_transpose`: a transpose moving whole rows of 16 or 8;
    - `matmul`: a `linalg.matmul` or `linalg.batch_matmul` in register
      tiles of `tile_sizes`.

    ```mlir
    #lamina.cpu_loop_tiles<elementwise tiles = [1, 16]
                           vector_sizes = [1, 16]>
    ```
  }];
  let parameters = (ins
      EnumParameter<Lamina_LoopScheduleEnum>:$schedule,
      OptionalArrayRefParameter<"int64_t">:$tile_sizes,
      OptionalArrayRefParameter<"int64_t">:$vector_sizes);
  let assemblyFormat = [{
    `<` $schedule (`tiles` `=` `[` $tile_sizes^ `]`)?
        (`vector_sizes` `=` `[` $vector_sizes^ `]`)? `>`
  }];
  let genVerifyDecl = 1;
}

def Lamina_CpuMatmulAttr : Lamina_Attr<"CpuMatmul", "cpu_matmul"> {
  let summary = "how a float matmul is laid out for a CPU's register tiles";
  let description = [{
    The code-generation choice `lamina-select-cpu-strategy` makes for a
    layer's matmul (`lamina.fused_linear`, `lamina.matmul`,
    `lamina.fused_qkv`, a linear layer), under the op's `lamina.codegen`,
    and which `convert-lamina-to-linalg` follows:

    - `weight_block`: `W[N, K]` is packed into `Wp[N/B, K, B]`, `B` output
      features a register tile reads contiguously per `k`;
    - `row_panel` (0: none): the input, a transpose `Tᵀ` (the backward's
      `dW = dyᵀ·x`), is packed from `T` into panels `Xp[M/P, K, P]`;
    - `k_group` (1 or 2): consecutive `k` packed together, 2 being
      AVX512-BF16's pairs (`Wp[N/B, K/2, B, 2]`);
    - `accumulator`: the element type the matmul sums in;
    - `tiles` (optional): its `#lamina.cpu_tiles`; without them the matmul
      stays a loop nest. Lowering copies the layout onto the packed
      matmul, where the schedules read it.

    ```mlir
    %y = lamina.matmul %x, %w {lamina.codegen = #lamina.cpu_matmul<
        weight_block = 16, row_panel = 4, accumulator = f32>} ...
    ```
  }];
  let parameters = (ins "int64_t":$weight_block,
                    DefaultValuedParameter<"int64_t", "0">:$row_panel,
                    DefaultValuedParameter<"int64_t", "1">:$k_group,
                    "::mlir::Type":$accumulator,
                    OptionalParameter<"::mlir::lamina::CpuTilesAttr">:$tiles);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // LAMINA_LAMINA_ATTRS_TD
