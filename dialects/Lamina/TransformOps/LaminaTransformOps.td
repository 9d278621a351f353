//===- LaminaTransformOps.td - Slapo primitives as transform ops -*- tablegen -*-===//
//
// Each Slapo schedule primitive is a transform-dialect op, so a schedule is
// a replayable, checkable IR script applied by the transform interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_TRANSFORMOPS_TD
#define LAMINA_LAMINA_TRANSFORMOPS_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Dialect/Transform/IR/TransformTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class Lamina_TransformOp<string mnemonic, list<Trait> traits = []>
    : Op<Transform_Dialect, "lamina." # mnemonic, traits> {
  let cppNamespace = "::mlir::lamina";
}

def Lamina_MatchTransformOp : Lamina_TransformOp<"match", [
    NavigationTransformOpTrait, MemoryEffectsOpInterface,
    DeclareOpInterfaceMethods<TransformOpInterface>]> {
  let summary = "Address layers by module path or regex (sch[\"a.b\"], "
                "sch.find(regex))";
  let description = [{
    Returns a handle to every layer op under `root` whose `path` equals
    `path`, or fully matches the regular expression `regex` (exactly one of
    the two is given).

    #### Return modes
    Produces a silenceable failure when no layer matches (Slapo raises for
    an unknown path); otherwise succeeds. Reads `root` only.

    ```mlir
    %fc = transform.lamina.match %root path "h.0.mlp.fc_in"
        : (!transform.any_op) -> !transform.any_op
    %mlp = transform.lamina.match %root regex "h\\.[0-9]+\\.mlp\\..*"
        : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$root,
                   OptionalAttr<StrAttr>:$path, OptionalAttr<StrAttr>:$regex);
  let results = (outs TransformHandleTypeInterface:$layers);
  let assemblyFormat = [{
    $root (`path` $path^)? (`regex` $regex^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_DecomposeTransformOp : Lamina_TransformOp<"decompose", [
    FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
    TransformOpInterface, TransformEachOpTrait]> {
  let summary = "nn.Linear → LinearWithSeparateBias (Slapo decompose)";
  let description = [{
    Rewrites each targeted `lamina.linear` with a bias into
    `lamina.linear_separate_bias` (same path and parameters), so that the
    bias add can be moved after a sync or fused.

    #### Return modes
    Consumes the handle and returns one to the new layers. Produces a
    silenceable failure, with a note on the layer, when it is not a
    `lamina.linear`, has no bias, or its weight is already sharded
    (decompose must come before shard).

    ```mlir
    %sep = transform.lamina.decompose %fc : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$result);
  let assemblyFormat = "$target attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter, ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def Lamina_FuseTransformOp : Lamina_TransformOp<"fuse", [
    FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
    TransformOpInterface, TransformEachOpTrait]> {
  let summary = "Fuse a layer's matmul and epilogue into one op (Slapo fuse)";
  let description = [{
    A linear layer becomes `lamina.fused_linear` with its epilogue; a
    `lamina.matmul` absorbs its single-use chain [sync] → bias → activation
    → dropout, as `lamina-fuse-epilogues` does. The fused op lowers to one
    loop nest that writes the output once.

    #### Return modes
    Consumes the handle and returns one to the fused ops. Produces a
    silenceable failure, with a note, for anything that is neither a linear
    layer nor a matmul with an epilogue to absorb.

    ```mlir
    %fused = transform.lamina.fuse %fc : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$result);
  let assemblyFormat = "$target attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter, ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def Lamina_ReplaceTransformOp : Lamina_TransformOp<"replace", [
    FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
    TransformOpInterface, TransformEachOpTrait]> {
  let summary = "Swap a layer for an equivalent variant (Slapo replace)";
  let description = [{
    Keeps the layer's path, parameters and sync:

    - `"fused_linear"`: the fused form, one op with the layer's epilogue;
    - `"lns"` with `f N`: the LNS variant; the float input is encoded in
      base 2^(2^-N), the layer runs on LNS numbers (the reference's
      sequential dot products), and its result is decoded back to the
      original float type. A weight or bias that is an argument of an
      uncalled function read only by this layer becomes an argument of LNS
      numbers (the program takes its codes, as an LNS layer holds and
      trains them); any other is encoded where the layer reads it.

    #### Return modes
    Consumes the handle and returns one to the new layers. Produces a
    silenceable failure, with a note, for an op that is not a linear layer,
    an unknown variant, an LNS variant without `f`, or a layer with an
    activation or dropout (LNS layers have neither).

    ```mlir
    %l = transform.lamina.replace %fc "lns" f 10 : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target, StrAttr:$variant,
                   OptionalAttr<I64Attr>:$f);
  let results = (outs TransformHandleTypeInterface:$result);
  let assemblyFormat = [{
    $target $variant (`f` $f^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter, ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

/// Ops that change parameters or attributes of the layers a handle points
/// to without replacing them.
class Lamina_LayerAttributeOp<string mnemonic>
    : Lamina_TransformOp<mnemonic, [
          DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
          TransformOpInterface, TransformEachOpTrait]> {
  let results = (outs);
  // Reads the handle, changes the payload in place.
  let extraClassDefinition = [{
    void $cppClass::getEffects(
        ::llvm::SmallVectorImpl<::mlir::MemoryEffects::EffectInstance> &effects) {
      ::mlir::transform::onlyReadsHandle(getTargetMutable(), effects);
      ::mlir::transform::modifiesPayload(effects);
    }
  }];
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter, ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def Lamina_ShardTransformOp : Lamina_LayerAttributeOp<"shard"> {
  let summary = "Shard a layer parameter across ranks (Slapo shard)";
  let description = [{
    Marks the function argument holding the layer's `weight` or `bias` as
    sharded on `axis` over the program's `lamina.world_size` ranks
    (`#lamina.layout<S(axis)>`): axis 0 of a weight is column parallel, axis
    1 row parallel. `input` shards the activation entering the layer when
    it is a program input: sequence parallelism hands each rank a block of
    the tokens, which a `fwd_pre` all_gather reassembles.

    #### Return modes
    Reads the handle, modifies the payload. Produces a silenceable failure,
    with a note on the layer, when the parameter does not exist (no bias),
    is computed rather than passed in, the axis is out of range, its size
    is not divisible by the world size, the program declares no world size,
    or the parameter is already sharded (Slapo would silently split twice).

    `groups = g` shards each of `g` equal parts of the axis on its own
    (`#lamina.layout<S(axis, groups = g)>`): the weight and bias of a
    contiguous `[Q; K; V]` projection (`groups = 3`) give every rank its
    heads of each of Q, K and V, where a plain split would give rank 0 all
    of Q. Each part's size must be divisible by the world size.

    ```mlir
    transform.lamina.shard %fc "weight" axis 0 : !transform.any_op
    transform.lamina.shard %fc "input" axis 1 : !transform.any_op
    transform.lamina.shard %c_attn "weight" axis 0 groups 3 : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target, StrAttr:$param,
                   I64Attr:$axis, DefaultValuedAttr<I64Attr, "1">:$groups);
  let assemblyFormat = [{
    $target $param `axis` $axis (`groups` $groups^)? attr-dict `:`
    type($target)
  }];
  let hasVerifier = 1;
}

def Lamina_SyncTransformOp : Lamina_LayerAttributeOp<"sync"> {
  let summary = "Add a sync point to a layer (Slapo sync)";
  let description = [{
    A `fwd_post` all_reduce or reduce_scatter acts on a linear layer's
    matmul result, before the bias (the layer takes the sync as its sync
    function: `lamina.linear` and `linear_separate_bias` become
    `linear_sync`). A `fwd_post` all_gather or scatter, a later `fwd_post`
    sync of the same layer (syncs chain, as Slapo's forward hooks do), and
    any `fwd_post` sync of a layer outside the linear family insert a
    `lamina.sync` on the layer's output. On the program itself (the
    schedule's `%root`), a `fwd_post` sync acts on every function result.
    `fwd_pre` (all_gather) and `bwd_post` (all_reduce, the identity in the
    forward pass) insert a `lamina.sync` on the layer's input. An
    all_gather's `tensor_parallel_output_grad` (a bool attribute) fixes its
    backward; without it, backward generation derives it (see
    `#lamina.sync`).

    #### Return modes
    Reads the handle, modifies the payload (a fwd_post sync on
    `lamina.linear` or `linear_separate_bias` replaces the op with a
    `linear_sync`; other layers take it in their sync slot in place). A mode/collective pair that does
    not exist, or a missing axis, is a verifier error of this op. Produces a
    silenceable failure, with a note on the layer, for an out-of-range axis
    or a fwd_post sync on a fused QKV (three results; its input takes
    fwd_pre and bwd_post syncs like any layer's), and without one for a
    fwd_pre or bwd_post sync on the whole program.

    ```mlir
    transform.lamina.sync %fc2 "fwd_post" "all_reduce" : !transform.any_op
    transform.lamina.sync %fc1 "fwd_pre" "all_gather" axis 1 : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                   StrAttr:$mode, StrAttr:$collective,
                   OptionalAttr<I64Attr>:$axis,
                   OptionalAttr<BoolAttr>:$tensor_parallel_output_grad);
  let assemblyFormat = [{
    $target $mode $collective (`axis` $axis^)? attr-dict `:` type($target)
  }];
  let hasVerifier = 1;
}

def Lamina_CutPipelineStageTransformOp
    : Lamina_LayerAttributeOp<"cut_pipeline_stage"> {
  let summary = "End a pipeline stage after this layer (Slapo "
                "cut_pipeline_stage)";
  let description = [{
    Marks each layer with `lamina.pipeline_cut`; `lamina-split-pipeline-stages`
    then splits its function after every marked layer into stage functions
    `@f_stage0`, `@f_stage1`, ..., each taking the values the next stages
    need, and `@f` calls them in order.

    #### Return modes
    Reads the handle, modifies the payload. Produces a silenceable failure
    for an op that is not a layer, or one not directly in a function body.

    ```mlir
    transform.lamina.cut_pipeline_stage %attn : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let assemblyFormat = "$target attr-dict `:` type($target)";
}

def Lamina_AnnotateTransformOp : Lamina_LayerAttributeOp<"annotate"> {
  let summary = "Attach metadata to a layer parameter (Slapo annotate)";
  let description = [{
    Adds the `key = value` entries (Slapo's `annotate(param, key, value)`)
    to the `lamina.annotations` dictionary of the function argument holding
    the layer's `param`. That is all it does, as in Slapo.

    #### Return modes
    Reads the handle, modifies the payload. Produces a silenceable failure,
    with a note, when the parameter does not exist or is not a function
    argument.

    ```mlir
    transform.lamina.annotate %fc "weight" {tied = true} : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target, StrAttr:$param,
                   DictionaryAttr:$entries);
  let assemblyFormat = "$target $param $entries attr-dict `:` type($target)";
}

def Lamina_CheckpointTransformOp : Lamina_LayerAttributeOp<"checkpoint"> {
  let summary = "Mark layers for activation recomputation (Slapo checkpoint)";
  let description = [{
    Sets the unit attribute `lamina.checkpoint` on each layer: backward
    generation recomputes their activations instead of storing them. The
    forward program is unchanged.

    #### Return modes
    Reads the handle, modifies the payload. Produces a silenceable failure,
    with a note, for an op that is not a layer.

    ```mlir
    transform.lamina.checkpoint %mlp : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let assemblyFormat = "$target attr-dict `:` type($target)";
}

def Lamina_CheckpointModuleTransformOp
    : Lamina_LayerAttributeOp<"checkpoint_module"> {
  let summary = "Recompute a whole module in the backward (Slapo checkpoint "
                "on a block)";
  let description = [{
    Adds `module` to the `lamina.checkpoint_modules` of every function under
    `target` computing part of it: backward generation saves only what
    enters the module and recomputes the rest inside the backward. An op is
    part of the module when its `path` (a layer, an activation) or its
    `lamina.module` (what the importer records for the ops between layers)
    is `module` or one of its submodules' paths.

    #### Return modes
    Reads the handle, modifies the payload. Produces a silenceable failure
    when no op belongs to the module.

    ```mlir
    transform.lamina.checkpoint_module %root "h.0" : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target, StrAttr:$module);
  let assemblyFormat = "$target $module attr-dict `:` type($target)";
}

def Lamina_ForkRngTransformOp : Lamina_LayerAttributeOp<"fork_rng"> {
  let summary = "Key a layer's dropout stream by rank (Slapo fork_rng)";
  let description = [{
    By default a dropout draws each element by its index in the whole
    tensor, so a sharded run drops exactly the unsharded mask. `fork_rng`
    switches the layer's dropout to Megatron's model-parallel stream: each
    rank draws its block from its own stream (keyed by its rank), as
    independent masks rather than blocks of one mask.

    #### Return modes
    Reads the handle, modifies the payload. Produces a silenceable failure,
    with a note on the layer, for a layer without a dropout, or one whose
    output is replicated (every rank would drop a different mask of the
    same value): only a column-parallel layer (weight sharded on axis 0) or
    one with a `scatter` / `reduce_scatter` sync produces a sharded value.

    ```mlir
    transform.lamina.fork_rng %fc1 : !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let assemblyFormat = "$target attr-dict `:` type($target)";
}

#endif // LAMINA_LAMINA_TRANSFORMOPS_TD
