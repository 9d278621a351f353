//===- GenerateBackward.cpp - Reverse-mode differentiation ----------------===//
//
// The generator is generic: it walks the forward function in reverse,
// accumulates cotangents per value and asks each op's
// ReverseDifferentiableOpInterface for the cotangents of its operands.
// Primal values the rules ask for are arguments (passed to the backward
// again), recomputations (ops of checkpointed layers, and cheap shape ops),
// or values the forward saves and returns.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/Collectives.h"
#include "lamina/Lamina/Analysis/GradientLayouts.h"
#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaNumberFormatInterface.h"
#include "lamina/Lamina/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAGENERATEBACKWARD
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// Whether the generator takes cotangents of `value`: tensors of a number
/// format (NumberFormatTypeInterface: floats, and LNS numbers, whose
/// cotangents are codes of the same base).
static bool isDifferentiable(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<NumberFormatTypeInterface>(type.getElementType());
}

/// The number format of a differentiable value's elements.
static NumberFormatTypeInterface getFormat(Value value) {
  return cast<NumberFormatTypeInterface>(
      getElementTypeOrSelf(value.getType()));
}

/// Ops the backward recomputes rather than saves: their result costs no
/// more than its operands (constants, empty tensors, reshapes, the rank,
/// the bwd_post syncs a sharded forward keeps as the identity).
static bool isCheapToRecompute(Operation *op) {
  if (auto sync = dyn_cast<SyncOp>(op))
    return sync.getSpec().getMode() == SyncMode::bwd_post && isPartitioned(op);
  return isa<arith::ConstantOp, tensor::EmptyOp, tensor::CollapseShapeOp,
             tensor::ExpandShapeOp, linalg::FillOp,
             shard::ProcessLinearIndexOp>(op);
}

/// Whether `value` is a mask (i1 elements): programs neither return nor
/// take one, so the backward recomputes it from its operands (a comparison
/// costs no more than reading a saved copy would).
static bool isMask(Value value) {
  return getElementTypeOrSelf(value.getType()).isInteger(1);
}

namespace {
/// A block function (lamina-outline-blocks) differentiated once for all its
/// calls: `forward` returns its results, then what `backward` needs of it;
/// `backward` takes the block's arguments, those saved values and one
/// cotangent per result, and returns the gradients of `gradients`' arguments.
struct BlockPair {
  func::FuncOp forward, backward;
  unsigned numResults = 0;
  SmallVector<unsigned> gradients;
};

/// Builds `@f_backward` while the forward `@f` is read.
class BackwardBuilder : public ReverseState {
public:
  BackwardBuilder(func::FuncOp forward, func::FuncOp backward,
                  const llvm::StringSet<> &checkpointed,
                  llvm::SmallDenseSet<unsigned> constants,
                  const llvm::StringMap<BlockPair> &blocks)
      : forward(forward), backward(backward), checkpointed(checkpointed),
        constants(std::move(constants)), blocks(blocks),
        builder(backward.getContext()) {
    if (auto modules = forward->getAttrOfType<ArrayAttr>(
            LaminaDialect::kCheckpointModulesAttrName))
      llvm::append_range(checkpointedModules,
                         modules.getAsValueRange<StringAttr>());
  }

  LogicalResult run();
  ArrayRef<Value> getSaved() const { return saved.getArrayRef(); }
  ArrayRef<unsigned> getGradientArguments() const { return gradientArgs; }

  Value getPrimal(Value value) override;

private:
  bool isCheckpointed(Operation *op) const {
    if (op->hasAttr(LaminaDialect::kCheckpointAttrName))
      return true;
    auto path = op->getAttrOfType<StringAttr>("path");
    if (path && checkpointed.contains(path.getValue()))
      return true;
    // Ops of a checkpointed module: its layers and the ops between them.
    return llvm::any_of(checkpointedModules, [&](StringRef module) {
      return isInModule(op, module);
    });
  }
  LogicalResult accumulate(Value value, Value cotangent);
  /// Zeros of the type of the forward value `value`.
  Value zerosLike(Value value);
  LogicalResult differentiate(Operation *op);
  /// The backward of a call of a block's forward: a call of its backward.
  LogicalResult differentiateCall(func::CallOp call, const BlockPair &pair);

  /// Whether `value` depends on a differentiable argument: only such values
  /// carry gradients back (masks and constants built in the program do not).
  bool isActive(Value value) const override { return active.contains(value); }

  /// Whether the backward returns a gradient of `argument`.
  bool isDifferentiated(BlockArgument argument) const {
    return isDifferentiable(argument) &&
           !constants.contains(argument.getArgNumber());
  }

  func::FuncOp forward, backward;
  const llvm::StringSet<> &checkpointed;
  /// Modules checkpointed whole (`lamina.checkpoint_modules`).
  SmallVector<StringRef> checkpointedModules;
  /// Arguments held constant: no gradient, nothing computed for one.
  llvm::SmallDenseSet<unsigned> constants;
  /// Block forwards by name → their pairs.
  const llvm::StringMap<BlockPair> &blocks;
  llvm::SmallPtrSet<Value, 32> active;
  OpBuilder builder;
  /// Forward values → their primal in the backward function.
  IRMapping primals;
  /// Forward values the forward returns for the backward, in order.
  llvm::SetVector<Value> saved;
  /// Forward values → their accumulated cotangent.
  DenseMap<Value, Value> cotangents;
  SmallVector<unsigned> gradientArgs;
  unsigned numArgs = 0;
};
} // namespace

Value BackwardBuilder::getPrimal(Value value) {
  if (Value known = primals.lookupOrNull(value))
    return known;
  Operation *def = value.getDefiningOp();
  if (def && (isCheckpointed(def) || isCheapToRecompute(def) ||
              isMask(value))) {
    // Operands first, then the op itself at the current point.
    IRMapping operands;
    for (Value operand : def->getOperands())
      operands.map(operand, getPrimal(operand));
    Operation *clone = builder.clone(*def, operands);
    for (auto [old, recomputed] :
         llvm::zip_equal(def->getResults(), clone->getResults()))
      primals.map(old, recomputed);
    return primals.lookup(value);
  }
  // Saved by the forward: a new argument after the forward's arguments and
  // the values saved before it.
  unsigned index = numArgs + saved.size();
  saved.insert(value);
  // A func.func takes any argument type: the insertion does not fail.
  (void)backward.insertArgument(index, value.getType(), DictionaryAttr(),
                                value.getLoc());
  Value argument = backward.getArgument(index);
  primals.map(value, argument);
  return argument;
}

Value BackwardBuilder::zerosLike(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Location loc = value.getLoc();
  Value empty =
      type.hasStaticShape()
          ? tensor::EmptyOp::create(builder, loc, type.getShape(),
                                    type.getElementType())
          : tensor::EmptyOp::create(
                builder, loc,
                tensor::getMixedSizes(builder, loc, getPrimal(value)),
                type.getElementType());
  Value zero = getFormat(value).buildGradientZero(builder, loc);
  return linalg::FillOp::create(builder, loc, zero, empty).getResult(0);
}

LogicalResult BackwardBuilder::accumulate(Value value, Value cotangent) {
  Value &slot = cotangents[value];
  if (!slot) {
    slot = cotangent;
    return success();
  }
  std::string whyNot;
  FailureOr<Value> sum = getFormat(value).buildGradientSum(
      builder, value.getLoc(), slot, cotangent, whyNot);
  if (succeeded(sum)) {
    slot = *sum;
    return success();
  }
  if (Operation *def = value.getDefiningOp())
    return def->emitOpError("result, ") << whyNot;
  return forward.emitOpError("argument ")
         << cast<BlockArgument>(value).getArgNumber() << ", " << whyNot;
}

LogicalResult BackwardBuilder::differentiate(Operation *op) {
  if (llvm::none_of(op->getResults(),
                    [&](Value result) { return cotangents.count(result); }))
    return success(); // nothing flows back through it
  if (llvm::none_of(op->getOperands(),
                    [&](Value operand) { return isActive(operand); }))
    return success(); // constants, masks, empty tensors: no gradient path
  if (auto call = dyn_cast<func::CallOp>(op))
    if (auto pair = blocks.find(call.getCallee()); pair != blocks.end())
      return differentiateCall(call, pair->second);
  auto rule = dyn_cast<ReverseDifferentiableOpInterface>(op);
  if (!rule)
    return op->emitOpError(
        "has no reverse-mode rule (ReverseDifferentiableOpInterface), but a "
        "gradient flows through it");
  SmallVector<Value> resultCotangents;
  for (Value result : op->getResults()) {
    Value cotangent = cotangents.lookup(result);
    if (!cotangent && isDifferentiable(result))
      cotangent = zerosLike(result);
    resultCotangents.push_back(cotangent);
  }
  SmallVector<Value> operandCotangents(op->getNumOperands());
  if (failed(rule.buildVectorJacobianProduct(builder, *this, resultCotangents,
                                             operandCotangents)))
    return failure();
  for (auto [operand, cotangent] :
       llvm::zip_equal(op->getOperands(), operandCotangents))
    if (cotangent && isDifferentiable(operand) && isActive(operand) &&
        failed(accumulate(operand, cotangent)))
      return failure();
  return success();
}

LogicalResult BackwardBuilder::differentiateCall(func::CallOp call,
                                                 const BlockPair &pair) {
  // The block's arguments, its saved values, one cotangent per result.
  SmallVector<Value> operands;
  for (Value operand : call.getOperands())
    operands.push_back(getPrimal(operand));
  for (Value saved : call.getResults().drop_front(pair.numResults))
    operands.push_back(getPrimal(saved));
  for (Value result : call.getResults().take_front(pair.numResults)) {
    Value cotangent = cotangents.lookup(result);
    if (!cotangent)
      cotangent = isDifferentiable(result) ? zerosLike(result)
                                           : getPrimal(result);
    operands.push_back(cotangent);
  }
  auto backwardCall =
      func::CallOp::create(builder, call.getLoc(), pair.backward, operands);
  if (Attribute instance = call->getAttr(LaminaDialect::kModuleAttrName))
    backwardCall->setAttr(LaminaDialect::kModuleAttrName, instance);
  for (auto [argument, gradient] :
       llvm::zip_equal(pair.gradients, backwardCall.getResults())) {
    Value operand = call.getOperand(argument);
    if (isActive(operand) && failed(accumulate(operand, gradient)))
      return failure();
  }
  return success();
}

LogicalResult BackwardBuilder::run() {
  Block &body = forward.getBody().front();
  numArgs = body.getNumArguments();
  for (BlockArgument argument : body.getArguments())
    if (isDifferentiated(argument))
      active.insert(argument);
  // Through values of any type: a float result computed from active LNS
  // codes still depends on the argument, and its op must have a rule.
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value operand) { return isActive(operand); }))
      for (Value result : op.getResults())
        active.insert(result);
  Block *entry = backward.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  for (BlockArgument argument : body.getArguments())
    primals.map(argument, entry->getArgument(argument.getArgNumber()));
  Operation *terminator = body.getTerminator();
  for (auto [index, result] : llvm::enumerate(terminator->getOperands()))
    if (isDifferentiable(result) &&
        failed(accumulate(result, entry->getArgument(numArgs + index))))
      return failure();

  // Pipeline stages: the backward of forward stage s is backward stage
  // N - 1 - s; a cut follows the last op of each but the last.
  DenseMap<Operation *, int64_t> stageOf;
  int64_t numStages = 1;
  for (Operation &op : body.without_terminator()) {
    stageOf[&op] = numStages - 1;
    if (op.hasAttr(LaminaDialect::kPipelineCutAttrName))
      ++numStages;
  }
  int64_t current = numStages - 1;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (stageOf[&op] < current) {
      if (!entry->empty())
        entry->back().setAttr(LaminaDialect::kPipelineCutAttrName,
                              builder.getUnitAttr());
      current = stageOf[&op];
    }
    if (failed(differentiate(&op)))
      return failure();
  }
  if (numStages > 1)
    backward->setAttr(LaminaDialect::kPipelineReversedAttrName,
                      builder.getUnitAttr());

  SmallVector<Value> gradients;
  for (BlockArgument argument : body.getArguments()) {
    if (!isDifferentiated(argument))
      continue;
    Value cotangent = cotangents.lookup(argument);
    gradients.push_back(cotangent ? cotangent : zerosLike(argument));
    gradientArgs.push_back(argument.getArgNumber());
  }
  func::ReturnOp::create(builder, forward.getLoc(), gradients);
  // Rules build every operand's cotangent; those of values that carry
  // none back (a constant argument's dX = dY·W) are left unused.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op) &&
        !op.hasAttr(LaminaDialect::kPipelineCutAttrName))
      op.erase();
  backward.setType(FunctionType::get(
      backward.getContext(), entry->getArgumentTypes(),
      ValueRange(gradients).getTypes()));
  return success();
}

/// `@<f>_forward`: `function` returning, after its results, `saved`.
static func::FuncOp buildForward(func::FuncOp function, ArrayRef<Value> saved,
                                 OpBuilder &builder) {
  auto forward = func::FuncOp::create(builder, function.getLoc(),
                                      (function.getSymName() + "_forward").str(),
                                      function.getFunctionType());
  forward.setAllArgAttrs(function.getAllArgAttrs());
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
    forward.setResultAttrs(i, function.getResultAttrDict(i));
  IRMapping mapping;
  function.getBody().cloneInto(&forward.getBody(), mapping);
  auto terminator =
      cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> results(terminator.getOperands());
  for (Value value : saved)
    results.push_back(mapping.lookup(value));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(terminator);
  func::ReturnOp::create(builder, terminator.getLoc(), results);
  terminator.erase();
  forward.setType(FunctionType::get(builder.getContext(),
                                    function.getArgumentTypes(),
                                    ValueRange(results).getTypes()));
  return forward;
}

namespace {
/// What the backward of a sharded program needs to know of the program
/// before partitioning: the layout each argument is declared with and its
/// gradient gets (inferGradientLayouts), and which arguments are layer
/// parameters.
struct ShardedArguments {
  int64_t worldSize = 1;
  SmallVector<LayoutAttr> declared, gradient;
  llvm::SmallPtrSet<Value, 8> parameters;
};
} // namespace

/// Checks the backward layouts of the sharded `function` and records what
/// finishShardedGradients needs, or fails after reporting the first gradient
/// the backward would get wrong. The all_gather syncs that leave their
/// transpose open get the one their gradients need.
static FailureOr<ShardedArguments>
analyzeShardedArguments(func::FuncOp function, int64_t worldSize,
                        ArrayRef<int64_t> constants) {
  FailureOr<DenseMap<Value, LayoutAttr>> layouts = inferLayouts(function);
  if (failed(layouts))
    return failure();
  SmallVector<DerivedSync> derived;
  FailureOr<DenseMap<Value, LayoutAttr>> gradients =
      inferGradientLayouts(function, *layouts, &derived, constants);
  if (failed(gradients))
    return failure();
  applyDerivedSyncs(derived);
  ShardedArguments result;
  result.worldSize = worldSize;
  result.parameters = getLayerParameters(function);
  LayoutAttr replicated = layout::replicated(function.getContext());
  for (BlockArgument argument : function.getArguments()) {
    LayoutAttr declared = getDeclaredLayout(argument);
    LayoutAttr gradient = gradients->lookup(argument);
    result.declared.push_back(declared ? declared : replicated);
    result.gradient.push_back(gradient ? gradient : result.declared.back());
  }
  return result;
}

/// The gradients a partitioned backward returns, as the host takes them: a
/// parameter's is this rank's block of the whole gradient (partial sums of
/// a replicated parameter all-reduced first), an input's the whole gradient
/// on every rank (a sharded input's blocks all-gathered).
static LogicalResult finishShardedGradients(func::FuncOp backward,
                                            func::FuncOp target,
                                            ArrayRef<unsigned> gradientArgs,
                                            const ShardedArguments &args) {
  auto ret = cast<func::ReturnOp>(backward.getBody().front().getTerminator());
  OpBuilder builder(ret);
  MLIRContext *context = backward.getContext();
  SmallVector<Value> results(ret.getOperands());
  for (auto [index, argNumber] : llvm::enumerate(gradientArgs)) {
    LayoutAttr declared = args.declared[argNumber];
    LayoutAttr gradient = args.gradient[argNumber];
    bool isParameter = args.parameters.contains(target.getArgument(argNumber));
    Value &result = results[index];
    Location loc = result.getLoc();
    if (gradient.getKind() == LayoutKind::partial && isParameter &&
        declared.getKind() == LayoutKind::replicated) {
      result = layout::buildCollective(
          builder, loc, {CollectiveKind::all_reduce, std::nullopt}, result,
          result.getType());
      continue;
    }
    if (gradient != declared)
      return target.emitOpError("the gradient of argument ")
             << argNumber << " would have layout " << gradient
             << " but the argument has layout " << declared;
    if (declared.getKind() != LayoutKind::sharded)
      continue;
    if (isParameter) {
      backward.setResultAttr(index, LaminaDialect::kLayoutAttrName, declared);
      continue;
    }
    auto local = cast<RankedTensorType>(result.getType());
    SmallVector<int64_t> shape(local.getShape());
    shape[*declared.getAxis()] *= args.worldSize;
    result = layout::buildCollective(
        builder, loc, {CollectiveKind::all_gather, declared.getAxis()}, result,
        local.clone(shape));
  }
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  backward.setType(FunctionType::get(context, backward.getArgumentTypes(),
                                     ValueRange(results).getTypes()));
  return success();
}

/// Drops what partitionModule kept for backward generation: bwd_post syncs
/// (the identity in the forward) and the records of collectives' syncs.
static void dropBackwardSyncs(ModuleOp module) {
  module.walk([](Operation *op) {
    op->removeAttr(LaminaDialect::kFromSyncAttrName);
    if (auto sync = dyn_cast<SyncOp>(op)) {
      sync.getResult().replaceAllUsesWith(sync.getInput());
      sync.erase();
    }
  });
}

/// Whether `function` can get its `@<function>_forward` and
/// `@<function>_backward`: one block, and neither name taken.
static LogicalResult checkDifferentiable(func::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  for (StringRef suffix : {"_forward", "_backward"})
    if (SymbolTable::lookupSymbolIn(module,
                                    (function.getSymName() + suffix).str()))
      return function.emitOpError("cannot be differentiated: the module "
                                  "already defines @")
             << function.getSymName() << suffix;
  if (!function.getBody().hasOneBlock())
    return function.emitOpError("has control flow; backward generation takes "
                                "functions of one block");
  return success();
}

/// An empty `@<function>_backward` after `function`, taking its arguments
/// and one cotangent per result (the generator inserts the saved values).
static func::FuncOp createBackward(func::FuncOp function, OpBuilder &builder) {
  builder.setInsertionPointAfter(function);
  SmallVector<Type> inputs(function.getArgumentTypes());
  llvm::append_range(inputs, function.getResultTypes());
  return func::FuncOp::create(builder, function.getLoc(),
                              (function.getSymName() + "_backward").str(),
                              builder.getFunctionType(inputs, {}));
}

/// The block functions (lamina-outline-blocks) `function` calls, once each.
static SmallVector<func::FuncOp> getCalledBlocks(func::FuncOp function) {
  llvm::SetVector<func::FuncOp> blocks;
  function.walk([&](func::CallOp call) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (callee && callee->hasAttr(LaminaDialect::kBlockAttrName))
      blocks.insert(callee);
  });
  return blocks.takeVector();
}

/// Differentiates each of `blocks` once, into `@<block>_forward` and
/// `@<block>_backward` (private blocks too), and makes `target`'s calls call
/// the forwards, which also return what the backward needs; `pairs` gets
/// each forward's pair. Erases the blocks once uncalled.
static LogicalResult differentiateBlocks(func::FuncOp target,
                                         ArrayRef<func::FuncOp> blocks,
                                         const llvm::StringSet<> &checkpointed,
                                         llvm::StringMap<BlockPair> &pairs) {
  auto module = target->getParentOfType<ModuleOp>();
  const llvm::StringMap<BlockPair> noBlocks;
  DenseMap<StringRef, const BlockPair *> pairOf;
  for (func::FuncOp block : blocks) {
    if (failed(checkDifferentiable(block)))
      return failure();
    OpBuilder builder(module.getContext());
    func::FuncOp backward = createBackward(block, builder);
    BackwardBuilder generator(block, backward, checkpointed,
                              /*constants=*/{}, noBlocks);
    if (failed(generator.run())) {
      backward.erase();
      return failure();
    }
    builder.setInsertionPoint(backward);
    func::FuncOp forward = buildForward(block, generator.getSaved(), builder);
    for (func::FuncOp function : {forward, backward}) {
      function.setPrivate();
      function->setAttr(LaminaDialect::kBlockAttrName,
                        block->getAttr(LaminaDialect::kBlockAttrName));
    }
    BlockPair &pair = pairs[forward.getSymName()];
    pair = {forward, backward, block.getNumResults(),
            llvm::to_vector(generator.getGradientArguments())};
    pairOf[block.getSymName()] = &pair;
  }
  SmallVector<func::CallOp> calls;
  target.walk([&](func::CallOp call) {
    if (pairOf.count(call.getCallee()))
      calls.push_back(call);
  });
  for (func::CallOp call : calls) {
    const BlockPair &pair = *pairOf.lookup(call.getCallee());
    OpBuilder builder(call);
    auto forwardCall = func::CallOp::create(builder, call.getLoc(),
                                            pair.forward, call.getOperands());
    forwardCall->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    call.replaceAllUsesWith(
        forwardCall.getResults().take_front(pair.numResults));
    call.erase();
  }
  for (func::FuncOp block : blocks)
    if (block.isPrivate() && SymbolTable::symbolKnownUseEmpty(block, module))
      block.erase();
  return success();
}

namespace {
struct LaminaGenerateBackwardPass
    : mlir::lamina::impl::LaminaGenerateBackwardBase<
          LaminaGenerateBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module.lookupSymbol<func::FuncOp>(function);
    if (!target || target.isDeclaration()) {
      module.emitError() << "lamina-generate-backward: no function @"
                         << function << " to differentiate";
      return signalPassFailure();
    }
    if (failed(checkDifferentiable(target)))
      return signalPassFailure();
    // A sharded program is checked, then partitioned, then differentiated
    // rank by rank: each rule sees per-rank values and the collectives the
    // partitioner made, which it transposes.
    std::optional<ShardedArguments> sharded;
    std::optional<int64_t> worldSize = getWorldSize(module);
    bool shardsOnRanks = worldSize && *worldSize > 1 && shardsValues(target);
    SmallVector<func::FuncOp> blocks = getCalledBlocks(target);
    if (shardsOnRanks) {
      if (isPartitioned(module)) {
        target.emitOpError("is already partitioned; lamina-generate-backward "
                           "takes the sharded program before lamina-partition "
                           "(it partitions it itself)");
        return signalPassFailure();
      }
      FailureOr<ShardedArguments> analysis =
          analyzeShardedArguments(target, *worldSize,
                                  llvm::to_vector(constants));
      if (failed(analysis))
        return signalPassFailure();
      sharded = std::move(*analysis);
    }
    // Layers marked for recomputation, by path: their pieces keep it.
    llvm::StringSet<> checkpointed;
    SmallVector<func::FuncOp> functions = {target};
    llvm::append_range(functions, blocks);
    for (func::FuncOp function : functions)
      function.walk([&](LayerOpInterface layer) {
        if (layer->hasAttr(LaminaDialect::kCheckpointAttrName))
          checkpointed.insert(layer.getLayerPath().getValue());
      });
    // Differentiate the pieces of each layer.
    RewritePatternSet patterns(&getContext());
    populateLaminaDecomposePatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (func::FuncOp function : functions)
      if (failed(applyPatternsGreedily(function, frozen)))
        return signalPassFailure();
    // Each block is partitioned once, for the layouts its calls pass.
    if (sharded && failed(partitionModule(module, /*keepBackwardSyncs=*/true)))
      return signalPassFailure();
    llvm::StringMap<BlockPair> blockPairs;
    if (failed(differentiateBlocks(target, blocks, checkpointed, blockPairs)))
      return signalPassFailure();

    OpBuilder builder(module.getContext());
    func::FuncOp backward = createBackward(target, builder);
    llvm::SmallDenseSet<unsigned> constantSet;
    for (int64_t index : constants) {
      if (index < 0 || index >= int64_t(target.getNumArguments())) {
        target.emitOpError("has no argument ")
            << index << " to hold constant (constants=); it takes "
            << target.getNumArguments();
        backward.erase();
        return signalPassFailure();
      }
      constantSet.insert(index);
    }
    BackwardBuilder generator(target, backward, checkpointed,
                              std::move(constantSet), blockPairs);
    if (failed(generator.run()) ||
        (sharded && failed(finishShardedGradients(
                        backward, target, generator.getGradientArguments(),
                        *sharded)))) {
      backward.erase();
      return signalPassFailure();
    }
    // The forward's arguments come first, declared as in the forward.
    for (unsigned i = 0, e = target.getNumArguments(); i < e; ++i)
      backward.setArgAttrs(i, target.getArgAttrDict(i));
    builder.setInsertionPoint(backward);
    func::FuncOp forward = buildForward(target, generator.getSaved(), builder);

    SmallVector<int64_t> gradients(generator.getGradientArguments());
    setTrainingPair(
        module, target.getSymName(),
        TrainingPairAttr::get(&getContext(), FlatSymbolRefAttr::get(forward),
                              FlatSymbolRefAttr::get(backward),
                              generator.getSaved().size(), gradients));
    if (sharded)
      dropBackwardSyncs(module);
  }
};
} // namespace
