//===- LaminaOps.td - Operations of the lamina dialect -----*- tablegen -*-===//

#ifndef LAMINA_LAMINA_OPS_TD
#define LAMINA_LAMINA_OPS_TD

include "Lamina/IR/LaminaDialect.td"
include "Lamina/IR/LaminaAttrs.td"
include "Lamina/IR/LaminaInterfaces.td"
include "Lns/IR/LnsTypes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// Element types of linear layers: floats, or LNS numbers.
def Lamina_LinearTensor : RankedTensorOf<[F32, F16, BF16, Lns_NumType]>;
/// Element types of activation and dropout: floats only.
def Lamina_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class Lamina_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lamina_Dialect, mnemonic, !listconcat(traits, [Pure])>;

/// A layer: carries the module path that schedules use to address it.
class Lamina_LayerOp<string mnemonic, list<Trait> traits = []>
    : Lamina_Op<mnemonic, !listconcat(traits, [Lamina_LayerOpInterface])>;

/// A member of the linear family: x·Wᵀ and its ordered epilogue.
class Lamina_LinearLayerOp<string mnemonic, list<Trait> traits = []>
    : Lamina_LayerOp<mnemonic,
                     !listconcat(traits, [Lamina_LinearLayerOpInterface])>;

//===----------------------------------------------------------------------===//
// The Slapo linear family
//===----------------------------------------------------------------------===//

def Lamina_LinearOp : Lamina_LinearLayerOp<"linear"> {
  let summary = "nn.Linear: `y = x·Wᵀ (+ b)`";
  let description = [{
    `x[..., K]` (any number of leading dims), `weight[N, K]`, optional
    `bias[N]`, result `[..., N]`. With f16/bf16 inputs the result may be f32
    (f32 accumulation). With LNS inputs the result has x's base.

    ```mlir
    %y = lamina.linear "h.0.mlp.fc_in" %x, %w bias %b
           : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_LinearTensor:$input,
                   Lamina_LinearTensor:$weight,
                   Optional<Lamina_LinearTensor>:$bias);
  let results = (outs Lamina_LinearTensor:$result);
  let assemblyFormat = [{
    $path $input `,` $weight (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_LinearWithSeparateBiasOp
    : Lamina_LinearLayerOp<"linear_separate_bias"> {
  let summary = "Slapo LinearWithSeparateBias: `y = x·Wᵀ; y = y + b`";
  let description = [{
    The form `decompose` produces, so that the bias add can be fused or
    moved after a sync. The bias is required.

    ```mlir
    %y = lamina.linear_separate_bias "h.0.mlp.fc_in" %x, %w bias %b
           : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_LinearTensor:$input,
                   Lamina_LinearTensor:$weight, Lamina_LinearTensor:$bias);
  let results = (outs Lamina_LinearTensor:$result);
  let assemblyFormat = [{
    $path $input `,` $weight `bias` $bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_LinearWithSyncOp : Lamina_LinearLayerOp<"linear_sync"> {
  let summary = "Slapo LinearWithSyncFunc: `y = x·Wᵀ; y = sync(y); y = y + b`";
  let description = [{
    The sync acts on the local matmul result before the bias (under row
    parallelism: the partial sums), so a row-parallel bias is added once.
    Only `fwd_post` syncs act on a layer's output.

    ```mlir
    %y = lamina.linear_sync "h.0.mlp.fc_out" %x, %w sync <fwd_post, all_reduce> bias %b
           : (tensor<8x256xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_LinearTensor:$input,
                   Lamina_LinearTensor:$weight,
                   OptionalAttr<Lamina_SyncAttr>:$sync,
                   Optional<Lamina_LinearTensor>:$bias);
  let results = (outs Lamina_LinearTensor:$result);
  let assemblyFormat = [{
    $path $input `,` $weight (`sync` $sync^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Lamina_LinearWithActOp : Lamina_LinearLayerOp<"linear_act"> {
  let summary = "Slapo LinearWithAct: `y = act(sync(x·Wᵀ) + b)`";
  let description = [{
    Bias is required. Slapo's act_fn "gelu" and "gelu_new" are both
    `gelu_tanh`.

    ```mlir
    %y = lamina.linear_act "h.0.mlp.fc_in" %x, %w bias %b activation gelu_tanh
           : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_FloatTensor:$input,
                   Lamina_FloatTensor:$weight,
                   OptionalAttr<Lamina_SyncAttr>:$sync,
                   Lamina_FloatTensor:$bias,
                   Lamina_ActivationKindAttr:$activation);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    $path $input `,` $weight (`sync` $sync^)? `bias` $bias `activation` ``
    $activation attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_LinearWithDropoutOp
    : Lamina_LinearLayerOp<"linear_dropout", [AttrSizedOperandSegments]> {
  let summary = "Slapo LinearWithDropout: `y = dropout(sync(x·Wᵀ) + b)`";
  let description = [{
    Bias is required. The mask is drawn from the counter-based generator
    keyed by the `seed` operand (needed when the dropout is active), the
    dropout's `offset` (plus `offset_base`, as `lamina.dropout`'s) and the
    element's global index.

    ```mlir
    %y = lamina.linear_dropout "h.0.mlp.fc_out" %x, %w bias %b
           dropout <p = 0.1, training> seed %s
           : (tensor<8x256xf32>, tensor<64x256xf32>, tensor<64xf32>, i64) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_FloatTensor:$input,
                   Lamina_FloatTensor:$weight,
                   OptionalAttr<Lamina_SyncAttr>:$sync,
                   Lamina_FloatTensor:$bias, Lamina_DropoutAttr:$dropout,
                   Optional<I64>:$seed, Optional<I64>:$offset_base);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    $path $input `,` $weight (`sync` $sync^)? `bias` $bias `dropout` $dropout
    (`seed` $seed^)? (`offset_base` $offset_base^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Lamina_FusedQKVOp : Lamina_LayerOp<"fused_qkv"> {
  let summary = "Slapo FusedQKV: one projection to interleaved q, k, v";
  let description = [{
    `qkv = x·Wᵀ + b` with `weight[3·hidden, hidden]`; output feature
    `f = (h·hd + d)·3 + t` holds q (t = 0), k (t = 1) or v (t = 2) of head
    `h`, element `d`. The result is viewed as `[..., heads, hd, 3]` and
    split on the last dim into q, k, v of shape `[..., heads, hd]`.

    `world_size` only divides the head count. The op is written either on
    whole tensors (`heads = num_heads`, weight `[3·hidden, hidden]`, to be
    sharded on axis 0) or per rank (`heads = num_heads / world_size`,
    weight `[3·hidden / world_size, hidden]`).

    ```mlir
    %q, %k, %v = lamina.fused_qkv "h.0.attn.qkv" %x, %w bias %b
                   num_heads 4 world_size 1
                   : (tensor<2x8x32xf32>, tensor<96x32xf32>, tensor<96xf32>)
                   -> (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>)
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_FloatTensor:$input,
                   Lamina_FloatTensor:$weight, Lamina_FloatTensor:$bias,
                   ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                   ConfinedAttr<I64Attr, [IntPositive]>:$world_size);
  let results = (outs Lamina_FloatTensor:$q, Lamina_FloatTensor:$k,
                      Lamina_FloatTensor:$v);
  let assemblyFormat = [{
    $path $input `,` $weight `bias` $bias `num_heads` $num_heads `world_size`
    $world_size attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_LayerNormOp
    : Lamina_LayerOp<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "nn.LayerNorm over the last dim";
  let description = [{
    `y = (x − mean) / sqrt(var + eps) · weight + bias` over the last dim of
    `x`, with the biased variance (as `nn.LayerNorm`); `weight` and `bias`
    (`[C]`, C the last dim) are each optional (`elementwise_affine=False`,
    `bias=None`).

    ```mlir
    %y = lamina.layer_norm "h.0.ln_1" %x weight %w bias %b eps 1.0e-05
           : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, RankedTensorOf<[F32]>:$input,
                   Optional<RankedTensorOf<[F32]>>:$weight,
                   Optional<RankedTensorOf<[F32]>>:$bias, F64Attr:$epsilon);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $path $input (`weight` $weight^)? (`bias` $bias^)? `eps` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Primitive pieces (what decompose produces)
//===----------------------------------------------------------------------===//

def Lamina_MatmulOp : Lamina_Op<"matmul"> {
  let summary = "`y = x·Wᵀ` over the last dim of x";
  let description = [{
    `x[..., K]`, `weight[N, K]` (PyTorch's layout), result `[..., N]`.

    ```mlir
    %y = lamina.matmul %x, %w : (tensor<8x64xbf16>, tensor<256x64xbf16>) -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Lamina_LinearTensor:$input,
                   Lamina_LinearTensor:$weight, OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_LinearTensor:$result);
  let assemblyFormat = [{
    ($path^)? $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_BiasAddOp : Lamina_Op<"bias_add",
                                  [AllTypesMatch<["input", "result"]>]> {
  let summary = "`y[..., n] = x[..., n] + b[n]`";
  let description = [{
    ```mlir
    %y = lamina.bias_add %x, %b : tensor<8x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Lamina_LinearTensor:$input, Lamina_LinearTensor:$bias,
                   OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_LinearTensor:$result);
  let assemblyFormat = [{
    ($path^)? $input `,` $bias attr-dict `:` type($input) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Lamina_ActivationOp : Lamina_Op<"activation", [SameOperandsAndResultType]> {
  let summary = "element-wise activation: gelu_tanh, gelu_erf, relu, silu or "
                "sigmoid";
  let description = [{
    `gelu_tanh(x) = 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³)))`,
    `gelu_erf(x) = 0.5·x·(1 + erf(x/√2))`, `relu(x) = max(x, 0)`,
    `silu(x) = x·σ(x)` and `sigmoid(x) = σ(x) = 1 / (1 + exp(−x))`.

    ```mlir
    %y = lamina.activation gelu_tanh %x : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Lamina_ActivationKindAttr:$kind,
                   Lamina_FloatTensor:$input, OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = "($path^ ``)? $kind $input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Lamina_DropoutOp : Lamina_Op<"dropout", [AllTypesMatch<["input", "result"]>,
                                             AttrSizedOperandSegments]> {
  let summary = "dropout with a counter-based, target-independent mask";
  let description = [{
    Zeroes each element with probability `p` and scales survivors by
    `1/(1-p)`; the identity in eval mode or for `p = 0`, zeros for `p = 1`.
    The mask depends only on (seed, offset, global element index).

    On one rank of a partitioned program, `rank` (the process's index in
    the device grid) locates the value's block in the whole tensor when the
    dropout is sharded (`shard_axis`), and keys the stream under `fork_rng`;
    a program without it is rank 0 of a world of one.

    `offset_base` (an i64 operand, active dropouts only) is added to the
    attribute's `offset`: a block function called once per layer
    (lamina-outline-blocks) takes each instance's base as an argument, so
    that every instance draws the mask it drew inline. lamina-inline-blocks
    folds a constant base back into the attribute.

    ```mlir
    %y = lamina.dropout %x <p = 0.1, training> seed %s : tensor<8x256xf32>
    %z = lamina.dropout %x <p = 0.1, training, shard_axis = 1, shards = 2>
           seed %s rank %r : tensor<8x128xf32>
    %w = lamina.dropout %x <p = 0.1, training, offset = 1> seed %s
           offset_base %base : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Lamina_FloatTensor:$input, Lamina_DropoutAttr:$config,
                   Optional<I64>:$seed, Optional<Index>:$rank,
                   Optional<I64>:$offset_base, OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    ($path^)? $input $config (`seed` $seed^)? (`rank` $rank^)?
    (`offset_base` $offset_base^)? attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    /// Adds a constant offset_base to the attribute's offset and drops the
    /// operand; fails (changing nothing) without a constant one.
    ::llvm::LogicalResult foldConstantOffsetBase();
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Lamina_SyncOp : Lamina_Op<"sync", [SameOperandsAndResultType]> {
  let summary = "a sync point (collective) on a distributed value";
  let description = [{
    Changes the value's layout as the spec's sync table says (`all_reduce`:
    P → R, `all_gather`: S(a) → R, `reduce_scatter`: P → S(a), `scatter`:
    R → S(a)); `bwd_post` syncs are the identity in the forward pass. The
    type is the whole (unsharded) tensor's; partitioning turns the op into
    collectives on per-rank shapes.

    ```mlir
    %y = lamina.sync %x <fwd_post, all_reduce> : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Lamina_LinearTensor:$input, Lamina_SyncAttr:$spec,
                   OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_LinearTensor:$result);
  let assemblyFormat = "($path^)? $input $spec attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lamina_ReduceReplicasOp
    : Lamina_Op<"reduce_replicas", [SameOperandsAndResultType]> {
  let summary = "a sum or mean over the data-parallel replicas";
  let description = [{
    The sum of the operand over the ranks of the device grid's data axis
    (`mean`: divided by their number), each replica holding its own value
    of the same shape: a parameter's gradient of the replica's batch
    becomes the gradient of the global batch. With `to R`, the sum arrives
    on replica R only (ZeRO stage 2: the replica that owns the parameter's
    optimizer state); the others' result is zeros. The layout on the tensor
    axis is the operand's. Lowered to a non-blocking reduction that starts
    where the op stands and completes before the result's first use, so
    that the computation in between hides it (convert-shard-to-lamina-mpi).

    ```mlir
    %g = lamina.reduce_replicas %dw mean : tensor<64x32xf32>
    %h = lamina.reduce_replicas %db mean to 1 : tensor<32xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64, F16, BF16]>:$input,
                   UnitAttr:$mean,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$root);
  let results = (outs RankedTensorOf<[F32, F64, F16, BF16]>:$result);
  let assemblyFormat = [{
    $input (`mean` $mean^)? (`to` $root^)? attr-dict `:` type($input)
  }];
}

def Lamina_SoftmaxOp : Lamina_Op<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one dim";
  let description = [{
    `y = exp(x − max) / Σ exp(x − max)` along `dim` (attention weights).

    ```mlir
    %p = lamina.softmax %scores dim 3 : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Lamina_FloatTensor:$input,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                   OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = "($path^)? $input `dim` $dim attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Ops of whole models: embeddings, masks, losses
//===----------------------------------------------------------------------===//

def Lamina_EmbeddingOp : Lamina_LayerOp<"embedding"> {
  let summary = "nn.Embedding: the weight's rows at the indices";
  let description = [{
    `y[i..., c] = weight[input[i...], c]` for `weight[V, C]` and integer
    indices of any shape. An index outside `[0, V)` reads row `0` or `V − 1`
    (the index clamped): the compiled code never reads outside the weight,
    and Python checks the indices before a call, as PyTorch does.
    `padding_idx` is the row whose gradient stays zero.

    Vocabulary parallel (what partitioning a weight sharded on its rows
    makes of it): with `shards` n and `rank` r, `weight` is rank r's block
    of the vocabulary, rows `[r·V/n, (r+1)·V/n)` of the whole; an index in
    that range reads its row, any other gives zeros, so the ranks' results
    sum to the embedding (an all-reduce follows).

    ```mlir
    %e = lamina.embedding "transformer.wte" %idx, %w
           : (tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
    %p = lamina.embedding "transformer.wte" %idx, %wblock shards 2 rank %r
           : (tensor<2x8xi64>, tensor<32x32xf32>, index) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, RankedTensorOf<[I64]>:$input,
                   RankedTensorOf<[F32]>:$weight,
                   OptionalAttr<I64Attr>:$padding_idx,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$shards,
                   Optional<Index>:$rank);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let extraClassDeclaration = [{
    /// An embedding has no bias (for LayerOpInterface).
    ::mlir::Value getBias() { return {}; }
  }];
  let assemblyFormat = [{
    $path $input `,` $weight (`padding_idx` $padding_idx^)?
    (`shards` $shards^ `rank` $rank)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_MaskedFillOp : Lamina_Op<"masked_fill",
                                     [AllTypesMatch<["input", "result"]>]> {
  let summary = "`Tensor.masked_fill`: `value` where the mask is true";
  let description = [{
    `y = mask ? value : x` element-wise; the mask has the input's rank and
    each of its dims is the input's or 1 (broadcast), as a causal mask
    `[1, 1, T, T]` over scores `[B, heads, T, T]`. `value` may be ±inf.

    ```mlir
    %y = lamina.masked_fill %scores, %causal value 0xFFF0000000000000
           : tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1>
    ```
  }];
  let arguments = (ins Lamina_FloatTensor:$input, RankedTensorOf<[I1]>:$mask,
                   F64Attr:$value, OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    ($path^)? $input `,` $mask `value` $value attr-dict `:` type($input) `,`
    type($mask)
  }];
  let hasVerifier = 1;
}

def Lamina_RopeOp : Lamina_Op<"rope", [AllTypesMatch<["input", "result"]>,
                                     AllTypesMatch<["cos", "sin"]>]> {
  let summary = "rotary position embedding: pairs of the last dim rotated";
  let description = [{
    Rotates pairs (a, b) of the last dim of `input` [..., D] by the angle
    whose cosine and sine are `cos` and `sin` [..., D/2] at the pair's
    index i: `(a·cos − b·sin, a·sin + b·cos)`. The pairs are elements 2i and
    2i + 1 (`interleaved`, LLaMA's reference code with its `unbind` and
    `stack`) or i and i + D/2 (`halves`, `x·cos + rotate_half(x)·sin`). The
    tables have the input's rank, and each of their other dims is the
    input's or 1 (broadcast): `[1, T, 1, D/2]` over queries `[B, T, H, D]`.

    ```mlir
    %q = lamina.rope %x, %cos, %sin interleaved
           : tensor<2x16x4x32xf32>, tensor<1x16x1x16xf32>
    ```
  }];
  let arguments = (ins Lamina_FloatTensor:$input, Lamina_FloatTensor:$cos,
                   Lamina_FloatTensor:$sin, Lamina_RopePairsAttr:$pairs,
                   OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    ($path^)? $input `,` $cos `,` $sin `` $pairs attr-dict `:` type($input)
    `,` type($cos)
  }];
  let hasVerifier = 1;
}

def Lamina_CrossEntropyOp : Lamina_Op<"cross_entropy"> {
  let summary = "F.cross_entropy of logits `[N, V]` and class indices `[N]`";
  let description = [{
    `loss_n = logsumexp(x[n, :]) − x[n, t_n]` for every `n` whose target is
    not `ignore_index`; the result is their mean over those `n` (the
    default, as PyTorch: NaN when every target is ignored), their sum
    (`sum`), or the losses themselves, 0 for the ignored rows (`none`, a
    tensor `[N]`). A target outside `[0, V)` that is not ignored
    contributes `logsumexp(x[n, :])` (Python checks the targets before a
    call).

    Vocabulary parallel (what partitioning logits sharded on the classes
    makes of it, as Megatron's and Slapo's ParallelCrossEntropy): with
    `shards` n and `rank` r, `logits` is rank r's block of the classes,
    columns `[r·V/n, (r+1)·V/n)` of the whole `V`. The op computes the whole
    loss on every rank from three all-reduces over the ranks of `[N]`
    values: the rows' maxima (max), their sums of `exp(x − max)` and the
    target logits, each found on the one rank holding its class (sums). No
    rank holds the whole logits.

    ```mlir
    %l = lamina.cross_entropy %logits, %targets ignore_index -1
           : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
    %each = lamina.cross_entropy %logits, %targets ignore_index -1 none
           : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<16xf32>
    %v = lamina.cross_entropy %block, %targets ignore_index -1 shards 2 rank %r
           : (tensor<16x32xf32>, tensor<16xi64>, index) -> tensor<f32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$logits,
                   RankedTensorOf<[I64]>:$targets, I64Attr:$ignore_index,
                   UnitAttr:$sum, UnitAttr:$none, OptionalAttr<StrAttr>:$path,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$shards,
                   Optional<Index>:$rank);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    ($path^)? $logits `,` $targets `ignore_index` $ignore_index (`sum` $sum^)?
    (`none` $none^)? (`shards` $shards^ `rank` $rank)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Derivatives (what lamina-generate-backward produces)
//===----------------------------------------------------------------------===//

def Lamina_ActivationGradOp
    : Lamina_Op<"activation_grad", [AllTypesMatch<["input", "cotangent",
                                                    "result"]>]> {
  let summary = "`dx = dy · act'(x)`, the backward of lamina.activation";
  let description = [{
    The exact derivatives: `gelu_tanh'(x) = 0.5·x·(1 − t²)·(√(2/π) +
    0.1070322243·x²) + 0.5·(1 + t)` with `t = tanh(√(2/π)·(x + 0.044715·x³))`,
    `gelu_erf'(x) = Φ(x) + x·φ(x)`, `relu'(x) = [x > 0]`.

    ```mlir
    %dx = lamina.activation_grad gelu_tanh %x, %dy : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Lamina_ActivationKindAttr:$kind,
                   Lamina_FloatTensor:$input, Lamina_FloatTensor:$cotangent,
                   OptionalAttr<StrAttr>:$path);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    ($path^ ``)? $kind $input `,` $cotangent attr-dict `:` type($input)
  }];
}

def Lamina_LayerNormGradOp : Lamina_Op<"layer_norm_grad"> {
  let summary = "the backward of lamina.layer_norm: dx, dweight, dbias";
  let description = [{
    With `x̂ = (x − mean)·r`, `r = 1/sqrt(var + eps)` over the last dim (C
    features) and `g = dy·weight` (`dy` without a weight):
    `dx = r·(g − mean(g) − x̂·mean(g·x̂))`, `dweight = Σ_rows dy·x̂`,
    `dbias = Σ_rows dy`.

    ```mlir
    %dx, %dw, %db = lamina.layer_norm_grad %x, %dy weight %w eps 1.0e-05
        : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<32xf32>)
        -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input,
                   RankedTensorOf<[F32]>:$cotangent,
                   Optional<RankedTensorOf<[F32]>>:$weight, F64Attr:$epsilon);
  let results = (outs RankedTensorOf<[F32]>:$input_grad,
                      RankedTensorOf<[F32]>:$weight_grad,
                      RankedTensorOf<[F32]>:$bias_grad);
  let assemblyFormat = [{
    $input `,` $cotangent (`weight` $weight^)? `eps` $epsilon attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_SoftmaxGradOp
    : Lamina_Op<"softmax_grad", [AllTypesMatch<["output", "cotangent",
                                                 "result"]>]> {
  let summary = "`dx = y·(dy − Σ_dim dy·y)`, the backward of lamina.softmax";
  let description = [{
    Takes the softmax's output `y` (not its input).

    ```mlir
    %dx = lamina.softmax_grad %y, %dy dim 3 : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Lamina_FloatTensor:$output,
                   Lamina_FloatTensor:$cotangent,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Lamina_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $cotangent `dim` $dim attr-dict `:` type($output)
  }];
  let hasVerifier = 1;
}

def Lamina_EmbeddingGradOp : Lamina_Op<"embedding_grad"> {
  let summary = "the weight gradient of lamina.embedding: rows scatter-added";
  let description = [{
    `dweight[v, c] = Σ_{i: input[i] = v} dy[i, c]`, added in index order;
    the row `padding_idx` stays zero, as do indices outside `[0, V)`. With
    `shards` and `rank`, the result is rank r's block of rows, as for
    `lamina.embedding`.

    ```mlir
    %dw = lamina.embedding_grad %idx, %dy
            : (tensor<2x8xi64>, tensor<2x8x32xf32>) -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I64]>:$input,
                   RankedTensorOf<[F32]>:$cotangent,
                   OptionalAttr<I64Attr>:$padding_idx,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$shards,
                   Optional<Index>:$rank);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `,` $cotangent (`padding_idx` $padding_idx^)?
    (`shards` $shards^ `rank` $rank)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lamina_CrossEntropyGradOp : Lamina_Op<"cross_entropy_grad"> {
  let summary = "the logits gradient of lamina.cross_entropy";
  let description = [{
    `dx[n, v] = g_n · (softmax(x[n, :])[v] − [v = t_n])` for the targets
    not ignored (zero rows for the others), `g_n = dloss / count` for the
    mean (count: the targets not ignored), `g_n = dloss` for `sum`, and
    `g_n = dloss[n]` for `none` (a cotangent `[N]`).

    Vocabulary parallel (`shards` n, `rank` r, as on `lamina.cross_entropy`):
    `logits` and the result are rank r's block of the classes; the softmax's
    row maxima and sums are all-reduced over the ranks, and the block's
    gradient needs nothing else from the others.

    ```mlir
    %dx = lamina.cross_entropy_grad %logits, %targets, %dl ignore_index -1
            : (tensor<16x64xf32>, tensor<16xi64>, tensor<f32>) -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$logits,
                   RankedTensorOf<[I64]>:$targets,
                   RankedTensorOf<[F32]>:$cotangent, I64Attr:$ignore_index,
                   UnitAttr:$sum, UnitAttr:$none,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$shards,
                   Optional<Index>:$rank);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $cotangent `ignore_index` $ignore_index
    (`sum` $sum^)? (`none` $none^)? (`shards` $shards^ `rank` $rank)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The fused form
//===----------------------------------------------------------------------===//

def Lamina_FusedLinearOp
    : Lamina_LinearLayerOp<"fused_linear", [AttrSizedOperandSegments]> {
  let summary = "x·Wᵀ followed by the ordered epilogue [sync] → bias → act → dropout, or a rotary embedding";
  let description = [{
    What epilogue fusion produces: one op, one loop nest writing the output
    once. The epilogue steps, each optional, always apply in the order in
    which they are printed: a `fwd_post` sync on the matmul result, the bias
    add, the activation, the dropout (`offset_base` added to its offset, as
    `lamina.dropout`'s). A sync splits the generated kernel: matmul,
    collective, then the rest of the epilogue.

    ```mlir
    %y = lamina.fused_linear "h.0.mlp.fc_in" %x, %w bias %b activation gelu_tanh
           : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
    ```

    With `rope %cos, %sin`, the epilogue is a rotary embedding of
    interleaved pairs (`lamina.rope ... interleaved`) of the result viewed
    as `[..., heads, head_dim]`, each head's features split in
    `head_dim = 2 · cos's last dim`: the tables have that view's rank
    (one more than the result's), each dim the view's or 1. It takes no
    sync, bias, activation or dropout.

    ```mlir
    %q = lamina.fused_linear "wq" %x, %w rope %cos, %sin
           : (tensor<2x16x128xf32>, tensor<128x128xf32>, tensor<1x16x1x16xf32>,
              tensor<1x16x1x16xf32>) -> tensor<2x16x128xf32>
    ```
  }];
  let arguments = (ins StrAttr:$path, Lamina_LinearTensor:$input,
                   Lamina_LinearTensor:$weight,
                   OptionalAttr<Lamina_SyncAttr>:$sync,
                   Optional<Lamina_LinearTensor>:$bias,
                   OptionalAttr<Lamina_ActivationKindAttr>:$activation,
                   OptionalAttr<Lamina_DropoutAttr>:$dropout,
                   Optional<I64>:$seed, Optional<Index>:$rank,
                   Optional<I64>:$offset_base,
                   Optional<Lamina_FloatTensor>:$rope_cos,
                   Optional<Lamina_FloatTensor>:$rope_sin);
  let results = (outs Lamina_LinearTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Type":$resultType,
                   "const ::mlir::lamina::LinearLayerParts &":$parts), [{
      build($_builder, $_state, resultType, parts.path, parts.input,
            parts.weight, parts.sync, parts.bias, parts.activation,
            parts.dropout, parts.seed, parts.rank, parts.offsetBase, Value(),
            Value());
    }]>
  ];
  let assemblyFormat = [{
    $path $input `,` $weight (`sync` $sync^)? (`bias` $bias^)?
    (`activation` `` $activation^)? (`dropout` $dropout^)? (`seed` $seed^)?
    (`rank` $rank^)? (`offset_base` $offset_base^)?
    (`rope` $rope_cos^ `,` $rope_sin)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::LogicalResult verifyRopeEpilogue();
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

#endif // LAMINA_LAMINA_OPS_TD
