//===- LaminaDialect.td - The lamina dialect definition ----*- tablegen -*-===//
//
// Linear layers of transformer models as Slapo schedules them.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LAMINA_DIALECT_TD
#define LAMINA_LAMINA_DIALECT_TD

include "mlir/IR/OpBase.td"

def Lamina_Dialect : Dialect {
  let name = "lamina";
  let cppNamespace = "::mlir::lamina";
  let summary = "The Slapo linear-layer family, its primitive pieces, sync "
                "points and distributed layouts";
  let description = [{
    Layer ops mirror Slapo's `slapo.op.linear` classes and `nn.Linear`; each
    carries its module path (`h.0.mlp.fc_in`) so that schedules address it by
    name. The primitive ops are what `decompose` produces (matmul `x·Wᵀ`, bias
    add, activation, dropout, sync); `lamina.fused_linear` is what epilogue
    fusion produces. Everything else between layers (residual adds, reshapes,
    attention arithmetic) uses upstream `tensor`, `linalg` and `arith`.

    Values of a distributed program carry layouts over a grid of
    `world_size` ranks: `#lamina.layout<R>` (replicated),
    `#lamina.layout<S(a)>` (sharded on axis `a`) and `#lamina.layout<P>`
    (partial sums) on the grid's tensor axis `tp`, or a layout per axis
    of a grid of several (`#lamina.layout<[dp: S(0), tp: S(1)]>`).
  }];
  let dependentDialects = ["::mlir::lamina::lns::LnsDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasCanonicalizer = 0;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Function-argument attribute holding a value's layout.
    static constexpr ::llvm::StringLiteral kLayoutAttrName = "lamina.layout";
    /// Function-argument attribute: a dictionary of metadata (annotate).
    static constexpr ::llvm::StringLiteral kAnnotationsAttrName =
        "lamina.annotations";
    /// Unit attribute on a layer: recompute its activations in backward.
    static constexpr ::llvm::StringLiteral kCheckpointAttrName =
        "lamina.checkpoint";
    /// String attribute on an op the importer emitted: the path of the
    /// PyTorch module whose forward computes it ("h.0.attn").
    static constexpr ::llvm::StringLiteral kModuleAttrName = "lamina.module";
    /// Function attribute: the module paths whose ops (layers and the ops
    /// between them, by `path` and `lamina.module`) the backward recomputes
    /// (transform.lamina.checkpoint_module).
    static constexpr ::llvm::StringLiteral kCheckpointModulesAttrName =
        "lamina.checkpoint_modules";
    /// Function attribute: the function is one block of a model's block
    /// list (its path, "transformer.h"), called once per instance
    /// (lamina-outline-blocks).
    static constexpr ::llvm::StringLiteral kBlockAttrName = "lamina.block";
    /// Unit attribute on a layer: a pipeline stage ends after it.
    static constexpr ::llvm::StringLiteral kPipelineCutAttrName =
        "lamina.pipeline_cut";
    /// Unit function attribute: the function's pipeline stages run in
    /// reverse rank order, stage i of N on rank N - 1 - i (a backward pass,
    /// whose first stage differentiates the forward's last).
    static constexpr ::llvm::StringLiteral kPipelineReversedAttrName =
        "lamina.pipeline_reversed";
    /// Function attribute: the pipeline stage a function computes.
    static constexpr ::llvm::StringLiteral kPipelineStageAttrName =
        "lamina.pipeline_stage";
    /// Debug annotation (lamina-check-layouts{annotate}): the layouts of an
    /// op's results.
    static constexpr ::llvm::StringLiteral kResultLayoutsAttrName =
        "lamina.result_layouts";
    /// Debug annotation (lamina-check-layouts{annotate}): the collective a
    /// sync's backward pass applies to the gradient.
    static constexpr ::llvm::StringLiteral kBackwardAttrName =
        "lamina.backward";
    /// Module attribute: for each differentiated function, its forward and
    /// backward functions, how many values the forward saves and which
    /// arguments get gradients (lamina-generate-backward).
    static constexpr ::llvm::StringLiteral kTrainingAttrName =
        "lamina.training";
    /// Module attribute holding the number of ranks of the device grid.
    static constexpr ::llvm::StringLiteral kWorldSizeAttrName =
        "lamina.world_size";
    /// Module attribute naming the axes of a device grid of several axes
    /// and their sizes (`{dp = 2, tp = 4}`); without it the grid is one
    /// axis `tp` of `lamina.world_size` ranks.
    static constexpr ::llvm::StringLiteral kGridAttrName = "lamina.grid";
    /// The grid axis schedules' syncs act on (tensor parallelism).
    static constexpr ::llvm::StringLiteral kTensorAxisName = "tp";
    /// The grid axis replica reductions act on (data parallelism).
    static constexpr ::llvm::StringLiteral kDataAxisName = "dp";
    /// Unit module attribute: the program is one rank's part of a
    /// `world_size` program (lamina-partition ran); sharded arguments and
    /// results have per-rank shapes.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName =
        "lamina.partitioned";
    /// The device grid (`shard.grid`) every collective of a partitioned
    /// module runs on.
    static constexpr ::llvm::StringLiteral kGridName = "lamina_grid";
    /// Attribute on a collective lamina-partition made for
    /// lamina-generate-backward: the sync it implements, whose backward
    /// collective (the spec's §3 table) its reverse-mode rule applies.
    static constexpr ::llvm::StringLiteral kFromSyncAttrName =
        "lamina.from_sync";
    /// Unit attribute on a lamina.sync a model's own code calls (a Slapo
    /// sync op in its forward): an all-reduce computes the sum it writes,
    /// whatever its operand's layout (identical replicas add up, as in
    /// eager code), instead of needing partial sums.
    static constexpr ::llvm::StringLiteral kAsWrittenAttrName =
        "lamina.as_written";
    /// Attribute naming the role of a lowered linalg op
    /// (#lamina.stage), which the code-generation pipelines match on.
    static constexpr ::llvm::StringLiteral kStageAttrName = "lamina.stage";
    /// Attribute on a register tile's loop over k that streams its packed
    /// weight from memory (no cache tile reuses it): how many bytes ahead of
    /// each row read lamina-cpu-prefetch-rows prefetches.
    static constexpr ::llvm::StringLiteral kPrefetchRowsAttrName =
        "lamina.prefetch_rows";
    /// Attribute on a layer's matmul: the #lamina.cpu_matmul layout its
    /// lowering follows (lamina-select-cpu-strategy); on a linalg op
    /// between layers: its #lamina.cpu_loop_tiles
    /// (lamina-select-cpu-loop-tiles).
    static constexpr ::llvm::StringLiteral kCodegenAttrName =
        "lamina.codegen";
    /// Module attribute mapping each function with hoisted weight packing
    /// to its #lamina.packed_weights.
    static constexpr ::llvm::StringLiteral kWeightPackingAttrName =
        "lamina.weight_packing";
  }];
}

#endif // LAMINA_LAMINA_DIALECT_TD
