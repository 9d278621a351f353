//===- LaminaTransformOps.cpp - Slapo primitives as transform ops ---------===//

#include "lamina/Lamina/TransformOps/LaminaTransformOps.h"

#include "lamina/Lamina/Analysis/LayoutRules.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Transform/IR/TransformTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace mlir::lamina;

#define GET_OP_CLASSES
#include "lamina/Lamina/TransformOps/LaminaTransformOps.cpp.inc"

/// Layers: the ops schedules address by module path.
static bool isLayer(Operation *op) { return isa<LayerOpInterface>(op); }

/// The module path of a layer, or of a piece that kept its layer's path.
static StringRef getLayerPath(Operation *op) {
  if (auto layer = dyn_cast<LayerOpInterface>(op))
    return layer.getLayerPath().getValue();
  auto path = op->getAttrOfType<StringAttr>("path");
  return path ? path.getValue() : StringRef();
}

/// A silenceable failure of `transform` about `payload`, with a note on it.
static DiagnosedSilenceableFailure failOn(Operation *transform,
                                          Operation *payload,
                                          const Twine &message) {
  DiagnosedSilenceableFailure failure =
      emitSilenceableFailure(transform, message);
  failure.attachNote(payload->getLoc()) << "layer '" << getLayerPath(payload)
                                        << "'";
  return failure;
}

//===----------------------------------------------------------------------===//
// MatchOp
//===----------------------------------------------------------------------===//

LogicalResult MatchTransformOp::verify() {
  if (bool(getPath()) == bool(getRegex()))
    return emitOpError("takes exactly one of 'path' and 'regex'");
  if (getRegex()) {
    std::string error;
    if (!llvm::Regex(*getRegex()).isValid(error))
      return emitOpError("invalid regex: ") << error;
  }
  return success();
}

DiagnosedSilenceableFailure
MatchTransformOp::apply(transform::TransformRewriter &, transform::TransformResults &results,
               transform::TransformState &state) {
  std::optional<llvm::Regex> regex;
  if (getRegex())
    regex.emplace(("^(" + *getRegex() + ")$").str());
  SmallVector<Operation *> layers;
  for (Operation *root : state.getPayloadOps(getRoot()))
    root->walk([&](Operation *op) {
      if (!isLayer(op))
        return;
      StringRef path = getLayerPath(op);
      if (regex ? regex->match(path) : path == *getPath())
        layers.push_back(op);
    });
  if (layers.empty())
    return emitSilenceableFailure(getLoc())
           << "no layer with " << (getPath() ? "path '" : "path matching '")
           << (getPath() ? *getPath() : *getRegex()) << "'";
  results.set(cast<OpResult>(getLayers()), layers);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// DecomposeOp
//===----------------------------------------------------------------------===//

/// The layout declared on the argument holding a layer's weight, if any.
static LayoutAttr getWeightLayout(Operation *op) {
  auto layer = dyn_cast<LayerOpInterface>(op);
  Value weight = layer ? layer.getLayerWeight() : Value();
  return weight ? getDeclaredLayout(weight) : LayoutAttr();
}

DiagnosedSilenceableFailure
DecomposeTransformOp::applyToOne(transform::TransformRewriter &rewriter,
                        Operation *target,
                        transform::ApplyToEachResultList &results,
                        transform::TransformState &) {
  auto linear = dyn_cast<LinearOp>(target);
  if (!linear)
    return failOn(*this, target,
                  "decompose applies to nn.Linear layers (lamina.linear)");
  if (!linear.getBias())
    return failOn(*this, target, "the layer has no bias to separate");
  if (LayoutAttr layout = getWeightLayout(target);
      layout && layout.getKind() == LayoutKind::sharded)
    return failOn(*this, target,
                  "decompose must come before shard: the weight is already "
                  "sharded");
  rewriter.setInsertionPoint(linear);
  auto separate = rewriter.replaceOpWithNewOp<LinearWithSeparateBiasOp>(
      linear, linear.getType(), linear.getPathAttr(), linear.getInput(),
      linear.getWeight(), linear.getBias());
  results.push_back(separate);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// FuseOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure
FuseTransformOp::applyToOne(transform::TransformRewriter &rewriter, Operation *target,
                   transform::ApplyToEachResultList &results,
                   transform::TransformState &) {
  if (auto matmul = dyn_cast<MatmulOp>(target)) {
    FailureOr<FusedLinearOp> fused = fuseMatmulEpilogue(rewriter, matmul);
    if (failed(fused))
      return failOn(*this, target,
                    "the matmul has no epilogue to absorb (its result has no "
                    "single sync, bias_add, activation or dropout user)");
    results.push_back(*fused);
    return DiagnosedSilenceableFailure::success();
  }
  auto layer = dyn_cast<LinearLayerOpInterface>(target);
  if (!layer)
    return failOn(*this, target,
                  "fuse applies to linear layers and lamina.matmul");
  rewriter.setInsertionPoint(target);
  auto fused = FusedLinearOp::create(rewriter, target->getLoc(),
                                     target->getResult(0).getType(),
                                     layer.getLayerParts());
  rewriter.replaceOp(target, fused.getResult());
  results.push_back(fused);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// ReplaceTransformOp
//===----------------------------------------------------------------------===//

/// Retypes `value` to a tensor of `number`s when it is an argument of a
/// function that nothing calls and `value` has one use; returns whether it
/// did.
static bool retypeAsLns(Value value, lns::NumType number) {
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument || !argument.hasOneUse())
    return false;
  auto function =
      dyn_cast<FunctionOpInterface>(argument.getOwner()->getParentOp());
  if (!function || argument.getOwner() != &function.getFunctionBody().front())
    return false;
  Operation *symbolTable = SymbolTable::getNearestSymbolTable(function);
  if (!symbolTable ||
      !SymbolTable::symbolKnownUseEmpty(function, symbolTable))
    return false;
  auto type = cast<RankedTensorType>(value.getType()).clone(number);
  argument.setType(type);
  SmallVector<Type> inputs(function.getArgumentTypes());
  inputs[argument.getArgNumber()] = type;
  function.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(
      function->getContext(), inputs, function.getResultTypes())));
  return true;
}

DiagnosedSilenceableFailure
ReplaceTransformOp::applyToOne(transform::TransformRewriter &rewriter,
                               Operation *target,
                               transform::ApplyToEachResultList &results,
                               transform::TransformState &) {
  auto layer = dyn_cast<LinearLayerOpInterface>(target);
  if (!layer)
    return failOn(*this, target, "replace applies to linear layers");
  LinearLayerParts parts = layer.getLayerParts();
  Location loc = target->getLoc();
  auto resultType = cast<RankedTensorType>(target->getResult(0).getType());
  rewriter.setInsertionPoint(target);
  if (getVariant() == "fused_linear") {
    auto fused = FusedLinearOp::create(rewriter, loc, resultType, parts);
    rewriter.replaceOp(target, fused.getResult());
    results.push_back(fused);
    return DiagnosedSilenceableFailure::success();
  }
  if (getVariant() != "lns")
    return failOn(*this, target,
                  "unknown variant '" + getVariant() +
                      "' (expected \"fused_linear\" or \"lns\")");
  if (!getF())
    return failOn(*this, target, "the LNS variant needs its base: f N");
  if (parts.activation || parts.dropout)
    return failOn(*this, target,
                  "LNS layers have no activation or dropout to carry over");
  if (isa<lns::NumType>(resultType.getElementType()))
    return failOn(*this, target, "the layer already computes in LNS");
  auto number = lns::NumType::get(getContext(), *getF());
  auto encode = [&](Value value) -> Value {
    if (!value)
      return value;
    auto type = cast<RankedTensorType>(value.getType());
    return lns::EncodeOp::create(rewriter, loc, type.clone(number), value);
  };
  Value input = encode(parts.input);
  // The layer's own parameters become LNS arguments: the program takes
  // their codes, as an LNS layer holds them (and trains them).
  auto parameter = [&](Value value) -> Value {
    if (!value || !retypeAsLns(value, number))
      return encode(value);
    return value;
  };
  Value weight = parameter(parts.weight);
  Value bias = parameter(parts.bias);
  auto lnsLayer =
      LinearWithSyncOp::create(rewriter, loc, resultType.clone(number),
                               parts.path, input, weight, parts.sync, bias);
  Value decoded = lns::DecodeOp::create(rewriter, loc, resultType,
                                        lnsLayer.getResult());
  rewriter.replaceOp(target, decoded);
  results.push_back(lnsLayer);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// Parameter access
//===----------------------------------------------------------------------===//

/// The function argument holding `param` ("weight" or "bias") of `layer`.
static FailureOr<BlockArgument> getParameter(Operation *transform,
                                             Operation *layer, StringRef param,
                                             DiagnosedSilenceableFailure &error) {
  auto layerOp = dyn_cast<LayerOpInterface>(layer);
  Value value = layerOp ? layerOp.getLayerOperand(param) : Value();
  if (!value) {
    error = failOn(transform, layer,
                   "the layer has no parameter '" + param + "'");
    return failure();
  }
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument || !isa<FunctionOpInterface>(
                       argument.getOwner()->getParentOp())) {
    error = failOn(transform, layer,
                   "parameter '" + param +
                       "' is computed by the program, not passed in");
    return failure();
  }
  return argument;
}

static FunctionOpInterface getFunction(BlockArgument argument) {
  return cast<FunctionOpInterface>(argument.getOwner()->getParentOp());
}

//===----------------------------------------------------------------------===//
// ShardOp
//===----------------------------------------------------------------------===//

LogicalResult ShardTransformOp::verify() {
  if (getParam() != "weight" && getParam() != "bias" && getParam() != "input")
    return emitOpError("shards 'weight', 'bias' or 'input', got '")
           << getParam() << "'";
  // The I64Attr getter is unsigned: read the attribute's signed value.
  if (int64_t axis = getAxisAttr().getInt(); axis < 0)
    return emitOpError("axis must be non-negative, got ") << axis;
  if (int64_t groups = getGroupsAttr().getInt(); groups < 1)
    return emitOpError("groups must be positive, got ") << groups;
  return success();
}

DiagnosedSilenceableFailure
ShardTransformOp::applyToOne(transform::TransformRewriter &rewriter, Operation *target,
                    transform::ApplyToEachResultList &,
                    transform::TransformState &) {
  DiagnosedSilenceableFailure error = DiagnosedSilenceableFailure::success();
  FailureOr<BlockArgument> argument =
      getParameter(*this, target, getParam(), error);
  if (failed(argument))
    return error;
  auto type = cast<RankedTensorType>(argument->getType());
  int64_t axis = getAxis();
  if (axis >= type.getRank())
    return failOn(*this, target,
                  "axis " + Twine(axis) + " is out of range for the " +
                      getParam() + " of rank " + Twine(type.getRank()));
  // Parameters are sharded over the grid's tensor axis.
  std::optional<int64_t> worldSize =
      getGridAxisSize(target, LaminaDialect::kTensorAxisName);
  if (!worldSize)
    return failOn(*this, target,
                  "the program declares no lamina.world_size (or "
                  "lamina.grid axis 'tp') to shard over");
  int64_t size = type.getDimSize(axis);
  int64_t groups = getGroups();
  if (ShapedType::isDynamic(size) || size % groups != 0)
    return failOn(*this, target,
                  getParam() + " dimension " + Twine(axis) + " of size " +
                      Twine(size) + " is not " + Twine(groups) +
                      " equal groups");
  if ((size / groups) % *worldSize != 0)
    return failOn(*this, target,
                  getParam() + " dimension " + Twine(axis) + " of size " +
                      Twine(size) +
                      (groups > 1 ? " in " + Twine(groups) + " groups of " +
                                        Twine(size / groups)
                                  : Twine()) +
                      " is not divisible by the world size " +
                      Twine(*worldSize));
  FunctionOpInterface function = getFunction(*argument);
  if (LayoutAttr layout = getDeclaredLayout(*argument);
      layout && layout.getKind() == LayoutKind::sharded)
    return failOn(*this, target,
                  getParam() + " is already sharded on axis " +
                      Twine(*layout.getAxis()) +
                      "; sharding a parameter twice is an error");
  rewriter.modifyOpInPlace(function, [&] {
    // The layouts on the grid's other axes stay as declared.
    function.setArgAttr(
        argument->getArgNumber(), LaminaDialect::kLayoutAttrName,
        replaceLayoutOnAxis(
            getContext(),
            function.getArgAttr(argument->getArgNumber(),
                                LaminaDialect::kLayoutAttrName),
            LaminaDialect::kTensorAxisName,
            LayoutAttr::get(getContext(), LayoutKind::sharded, axis, groups)));
  });
  return DiagnosedSilenceableFailure::success();
}


//===----------------------------------------------------------------------===//
// SyncOp
//===----------------------------------------------------------------------===//

/// The sync this op adds, or null after reporting why it cannot exist.
static SyncAttr buildSpec(SyncTransformOp op,
                          function_ref<InFlightDiagnostic()> emitError) {
  std::optional<SyncMode> mode = symbolizeSyncMode(op.getMode());
  std::optional<CollectiveKind> collective =
      symbolizeCollectiveKind(op.getCollective());
  if (!mode || !collective) {
    emitError() << "unknown sync '" << op.getMode() << "', '"
                << op.getCollective()
                << "' (modes: fwd_pre, fwd_post, bwd_post; collectives: "
                   "all_reduce, all_gather, reduce_scatter, scatter)";
    return {};
  }
  std::optional<int64_t> axis;
  if (op.getAxis())
    axis = *op.getAxis();
  // The legality rules of the #lamina.sync attribute.
  return SyncAttr::getChecked(emitError, op.getContext(), *mode, *collective,
                              axis, op.getTensorParallelOutputGrad());
}

LogicalResult SyncTransformOp::verify() {
  return success(bool(buildSpec(*this, [&] { return emitOpError(); })));
}

/// Why `spec` is illegal for the layout of the value it acts on, where the
/// schedule already fixes that layout: a program input's declared layout
/// (fwd_pre, bwd_post), or what the sharded weight of a linear layer
/// implies for its output (fwd_post; only linear layers have that slot). Elsewhere the layout depends on the rest of the
/// program, which lamina-check-layouts and lamina-partition judge.
static std::optional<std::string>
checkSyncLayout(LayerOpInterface layer, SyncAttr spec, Value synced) {
  if (spec.getMode() == SyncMode::bwd_post)
    return std::nullopt; // the identity in the forward pass
  bool onInput = spec.getMode() == SyncMode::fwd_pre;
  int64_t rank = cast<RankedTensorType>(synced.getType()).getRank();
  LayoutAttr known =
      onInput ? getDeclaredLayout(synced)
              : layout::matmulLayoutImpliedByWeight(
                    getDeclaredLayout(layer.getLayerWeight()), rank);
  if (!known)
    return std::nullopt;
  LayoutOrError rule = layout::syncForward(spec, known);
  if (!rule.failed())
    return std::nullopt;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "sync " << spec << " " << rule.getReason() << ", but the layer's "
     << (onInput ? "input" : "output") << " has layout " << known;
  return text;
}

/// The fwd_post sync directly after `value` (its only user), if any.
static SyncOp getOutputSync(Value value) {
  if (!value.hasOneUse())
    return {};
  auto sync = dyn_cast<SyncOp>(*value.getUsers().begin());
  return sync && sync.getSpec().getMode() == SyncMode::fwd_post ? sync
                                                                : SyncOp();
}

/// Puts a `lamina.sync` of `spec` after `value` and the fwd_post syncs
/// already chained after it, for every use of the chain's end.
static void syncValueAfter(RewriterBase &rewriter, Value value, SyncAttr spec,
                           StringAttr path, Location loc) {
  while (SyncOp next = getOutputSync(value))
    value = next.getResult();
  rewriter.setInsertionPointAfterValue(value);
  auto sync = SyncOp::create(rewriter, loc, value.getType(), value, spec, path);
  rewriter.replaceAllUsesExcept(value, sync.getResult(), sync);
}

/// fwd_post on the program (the schedule's root): syncs every result of
/// every function.
static DiagnosedSilenceableFailure syncProgramResults(
    SyncTransformOp transform, transform::TransformRewriter &rewriter,
    ModuleOp module, SyncAttr spec) {
  if (spec.getMode() != SyncMode::fwd_post)
    return emitSilenceableFailure(transform.getLoc())
           << "a sync on the whole program acts on its results (fwd_post); "
              "sync the input of the layers that read the program inputs";
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    function.walk([&](func::ReturnOp ret) {
      for (OpOperand &operand : ret->getOpOperands()) {
        int64_t rank =
            cast<RankedTensorType>(operand.get().getType()).getRank();
        if (spec.getAxis() && *spec.getAxis() >= rank)
          continue;
        rewriter.setInsertionPoint(ret);
        Value synced =
            SyncOp::create(rewriter, ret.getLoc(), operand.get().getType(),
                           operand.get(), spec, StringAttr());
        rewriter.modifyOpInPlace(ret, [&] { operand.set(synced); });
      }
    });
  }
  return DiagnosedSilenceableFailure::success();
}

DiagnosedSilenceableFailure
SyncTransformOp::applyToOne(transform::TransformRewriter &rewriter,
                            Operation *target,
                            transform::ApplyToEachResultList &,
                            transform::TransformState &) {
  SyncAttr spec = buildSpec(*this, [&] { return emitOpError(); });
  SyncMode mode = spec.getMode();
  if (auto module = dyn_cast<ModuleOp>(target))
    return syncProgramResults(*this, rewriter, module, spec);
  auto layer = dyn_cast<LayerOpInterface>(target);
  auto linear = dyn_cast<LinearLayerOpInterface>(target);
  if (!layer)
    return failOn(*this, target, "sync applies to layers");
  // fwd_pre and bwd_post act on the layer's input, fwd_post on its output.
  bool onInput = mode != SyncMode::fwd_post;
  Value input = layer.getLayerInput();
  Value synced = onInput ? input : target->getResult(0);
  int64_t rank = cast<RankedTensorType>(synced.getType()).getRank();
  if (spec.getAxis() && *spec.getAxis() >= rank)
    return failOn(*this, target,
                  "sync axis " + Twine(*spec.getAxis()) +
                      " is out of range for values of rank " + Twine(rank));

  // A fused QKV has three results and no sync slot.
  if (!onInput && target->getNumResults() != 1)
    return failOn(*this, target,
                  "a fused QKV has no fwd_post sync slot; sync its outputs "
                  "with lamina.sync");
  // What the schedule fixes of the synced value's layout: a program input's
  // declared layout, or a linear layer's matmul result (a chained sync acts
  // on an earlier sync's result, which the partitioner judges).
  bool chained = !onInput && (!linear || linear.getLayerSync() ||
                              getOutputSync(target->getResult(0)));
  if (!chained)
    if (std::optional<std::string> problem =
            checkSyncLayout(layer, spec, synced))
      return failOn(*this, target, *problem);

  if (onInput) {
    rewriter.setInsertionPoint(target);
    Value result = SyncOp::create(rewriter, target->getLoc(), input.getType(),
                                  input, spec, layer.getLayerPath());
    rewriter.modifyOpInPlace(target, [&] { layer.setLayerInput(result); });
    return DiagnosedSilenceableFailure::success();
  }
  // The layer's output takes the sync after it: for layers outside the
  // linear family, a later fwd_post sync (syncs chain, as Slapo's forward
  // hooks do), and a gather or scatter (it acts on the output bias included:
  // a column-parallel bias is sharded with the matmul's output features).
  CollectiveKind collective = spec.getCollective();
  bool onOutput = chained || collective == CollectiveKind::all_gather ||
                  collective == CollectiveKind::scatter;
  if (onOutput) {
    syncValueAfter(rewriter, target->getResult(0), spec,
                   layer.getLayerPath(), target->getLoc());
    return DiagnosedSilenceableFailure::success();
  }
  // Layers with a sync slot take the sync in place; nn.Linear and
  // LinearWithSeparateBias become LinearWithSyncFunc.
  if (linear.hasSyncSlot()) {
    rewriter.modifyOpInPlace(target, [&] { linear.setLayerSync(spec); });
    return DiagnosedSilenceableFailure::success();
  }
  LinearLayerParts parts = linear.getLayerParts();
  rewriter.setInsertionPoint(target);
  auto replacement = LinearWithSyncOp::create(
      rewriter, target->getLoc(), target->getResult(0).getType(), parts.path,
      parts.input, parts.weight, spec, parts.bias);
  replacement->setDiscardableAttrs(target->getDiscardableAttrDictionary());
  rewriter.replaceOp(target, replacement);
  return DiagnosedSilenceableFailure::success();
}


//===----------------------------------------------------------------------===//
// AnnotateOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure
AnnotateTransformOp::applyToOne(transform::TransformRewriter &rewriter,
                       Operation *target, transform::ApplyToEachResultList &,
                       transform::TransformState &) {
  DiagnosedSilenceableFailure error = DiagnosedSilenceableFailure::success();
  FailureOr<BlockArgument> argument =
      getParameter(*this, target, getParam(), error);
  if (failed(argument))
    return error;
  FunctionOpInterface function = getFunction(*argument);
  unsigned index = argument->getArgNumber();
  NamedAttrList annotations;
  if (auto existing = function.getArgAttrOfType<DictionaryAttr>(
          index, LaminaDialect::kAnnotationsAttrName))
    annotations.append(existing.getValue());
  for (NamedAttribute entry : getEntries())
    annotations.set(entry.getName(), entry.getValue());
  rewriter.modifyOpInPlace(function, [&] {
    function.setArgAttr(index, LaminaDialect::kAnnotationsAttrName,
                        annotations.getDictionary(getContext()));
  });
  return DiagnosedSilenceableFailure::success();
}


//===----------------------------------------------------------------------===//
// CheckpointOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure
CheckpointTransformOp::applyToOne(transform::TransformRewriter &rewriter,
                         Operation *target, transform::ApplyToEachResultList &,
                         transform::TransformState &) {
  if (!isLayer(target))
    return emitSilenceableFailure(getLoc())
           << "checkpoint applies to layers, not '" << target->getName()
           << "'";
  rewriter.modifyOpInPlace(target, [&] {
    target->setAttr(LaminaDialect::kCheckpointAttrName,
                    UnitAttr::get(getContext()));
  });
  return DiagnosedSilenceableFailure::success();
}


//===----------------------------------------------------------------------===//
// CheckpointModuleTransformOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure CheckpointModuleTransformOp::applyToOne(
    transform::TransformRewriter &rewriter, Operation *target,
    transform::ApplyToEachResultList &, transform::TransformState &) {
  StringRef module = getModule();
  bool found = false;
  target->walk([&](FunctionOpInterface function) {
    WalkResult inside = function->walk([&](Operation *op) {
      return isInModule(op, module) ? WalkResult::interrupt()
                                    : WalkResult::advance();
    });
    if (!inside.wasInterrupted())
      return;
    found = true;
    SmallVector<Attribute> paths;
    if (auto known = function->getAttrOfType<ArrayAttr>(
            LaminaDialect::kCheckpointModulesAttrName))
      llvm::append_range(paths, known);
    if (llvm::is_contained(paths, getModuleAttr()))
      return;
    paths.push_back(getModuleAttr());
    rewriter.modifyOpInPlace(function, [&] {
      function->setAttr(LaminaDialect::kCheckpointModulesAttrName,
                        rewriter.getArrayAttr(paths));
    });
  });
  if (!found)
    return emitSilenceableFailure(getLoc())
           << "no op of module '" << module
           << "': neither a layer path nor an op's lamina.module is in it";
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// CutPipelineStageTransformOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure CutPipelineStageTransformOp::applyToOne(
    transform::TransformRewriter &rewriter, Operation *target,
    transform::ApplyToEachResultList &, transform::TransformState &) {
  if (!isLayer(target))
    return emitSilenceableFailure(getLoc())
           << "cut_pipeline_stage applies to layers, not '"
           << target->getName() << "'";
  if (!isa<FunctionOpInterface>(target->getParentOp()))
    return failOn(*this, target,
                  "a pipeline cut must be directly in a function body");
  rewriter.modifyOpInPlace(target, [&] {
    target->setAttr(LaminaDialect::kPipelineCutAttrName,
                    UnitAttr::get(getContext()));
  });
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// Extension
//===----------------------------------------------------------------------===//

namespace {
class LaminaTransformDialectExtension
    : public transform::TransformDialectExtension<
          LaminaTransformDialectExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LaminaTransformDialectExtension)

  using Base::Base;

  void init() {
    declareDependentDialect<LaminaDialect>();
    declareDependentDialect<func::FuncDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "lamina/Lamina/TransformOps/LaminaTransformOps.cpp.inc"
        >();
  }
};
} // namespace

void mlir::lamina::registerTransformDialectExtension(
    DialectRegistry &registry) {
  registry.addExtensions<LaminaTransformDialectExtension>();
}

//===----------------------------------------------------------------------===//
// ForkRngTransformOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure
ForkRngTransformOp::applyToOne(transform::TransformRewriter &rewriter,
                               Operation *target,
                               transform::ApplyToEachResultList &,
                               transform::TransformState &) {
  auto layer = dyn_cast<LinearLayerOpInterface>(target);
  if (!layer || !layer.getLayerDropout())
    return failOn(*this, target, "fork_rng applies to layers with a dropout");
  LinearLayerParts parts = layer.getLayerParts();
  LayoutAttr output = layout::knownLayerOutputLayout(
      parts, getDeclaredLayout(parts.weight),
      cast<RankedTensorType>(target->getResult(0).getType()).getRank());
  if (!output || output.getKind() != LayoutKind::sharded)
    return failOn(*this, target,
                  "fork_rng on a replicated value: every rank would drop a "
                  "different mask of the same value; shard the layer first");
  DropoutAttr dropout = parts.dropout;
  rewriter.modifyOpInPlace(target, [&] {
    layer.setLayerDropout(DropoutAttr::get(getContext(), dropout.getP(),
                                           dropout.getTraining(),
                                           dropout.getOffset(),
                                           /*forkRng=*/true));
  });
  return DiagnosedSilenceableFailure::success();
}
