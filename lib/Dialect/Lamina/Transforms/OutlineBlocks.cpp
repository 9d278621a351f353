//===- OutlineBlocks.cpp - One function per distinct block ----------------===//
//
// The importer names each op by the module computing it. The instances of
// a block list (`transformer.h.0` … `h.11`) are runs of ops in a function's
// body; a run equal to its list's first (op by op, operand by operand,
// paths below the instance, inputs of equal layouts on every grid axis)
// becomes a call of one function.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/GradientLayouts.h"
#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Support/Rematerializable.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAOUTLINEBLOCKS
#include "lamina/Lamina/Transforms/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// The attributes naming the module that computes an op.
static constexpr StringLiteral kPathAttrName = "path";

/// `path` up to its first numbered component after the first: the instance
/// ("transformer.h.3" of "transformer.h.3.attn.c_attn"), or "".
static StringRef getInstance(StringRef path) {
  for (size_t dot = path.find('.'); dot != StringRef::npos;) {
    size_t next = path.find('.', dot + 1);
    StringRef component = path.slice(dot + 1, next);
    if (!component.empty() && llvm::all_of(component, llvm::isDigit))
      return path.take_front(next);
    dot = next;
  }
  return {};
}

/// The instance `op` belongs to, by its layer path or its module path.
static StringRef getInstance(Operation *op) {
  for (StringRef name : {StringRef(kPathAttrName),
                         StringRef(LaminaDialect::kModuleAttrName)})
    if (auto path = op->getAttrOfType<StringAttr>(name))
      if (StringRef instance = getInstance(path.getValue()); !instance.empty())
        return instance;
  return {};
}

/// The dropout of `op` that draws a mask (an active lamina.dropout, or a
/// layer's dropout epilogue, with its seed), or null: what takes an offset
/// base.
static DropoutAttr getMaskDropout(Operation *op) {
  DropoutAttr config;
  Value seed;
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    config = dropout.getConfig();
    seed = dropout.getSeed();
  } else if (auto layer = dyn_cast<LinearLayerOpInterface>(op)) {
    config = layer.getLayerDropout();
    seed = layer.getLayerSeed();
  }
  return config && config.isActive() && seed ? config : DropoutAttr();
}

/// Gives `op`'s mask-drawing dropout `config` and offset base `base`.
static void setMaskDropout(Operation *op, DropoutAttr config, Value base) {
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    dropout.setConfigAttr(config);
    dropout.getOffsetBaseMutable().assign(base);
    return;
  }
  auto layer = cast<LinearLayerOpInterface>(op);
  layer.setLayerDropout(config);
  layer.setLayerOffsetBase(base);
}

namespace {
/// What the backward recomputes besides checkpointed layers (which carry
/// their attribute): modules checkpointed whole.
struct Checkpoints {
  SmallVector<StringRef> modules;

  bool contains(Operation *op) const {
    return llvm::any_of(
        modules, [&](StringRef module) { return isInModule(op, module); });
  }
};

/// One instance's ops, contiguous in the body, and its boundary.
struct Run {
  StringRef instance;
  SmallVector<Operation *> ops;
  /// Values defined outside and read inside, in order of first use.
  llvm::SetVector<Value> inputs;
  /// Values defined inside and read after it, in op order.
  SmallVector<Value> outputs;
  /// The least offset of its mask-drawing dropouts, if any.
  std::optional<uint64_t> offsetBase;

  StringRef getList() const { return instance.rsplit('.').first; }
  Operation *getLast() const { return ops.back(); }
};

/// The layouts of a sharded program's values on each axis of its grid, and
/// the transposes its backward takes for the all_gather syncs left open: a
/// block function is partitioned and differentiated once, so its instances'
/// inputs must have the same layouts and their syncs the same transposes.
struct ValueLayouts {
  SmallVector<DenseMap<Value, LayoutAttr>> perAxis;
  DenseMap<Operation *, SmallVector<SyncAttr>> derivedSyncs;

  bool equal(Value a, Value b) const {
    return llvm::all_of(perAxis, [&](const DenseMap<Value, LayoutAttr> &on) {
      return getLayout(on, a) == getLayout(on, b);
    });
  }
  bool transposeAlike(Operation *a, Operation *b) const {
    return derivedSyncs.lookup(a) == derivedSyncs.lookup(b);
  }

private:
  static LayoutAttr getLayout(const DenseMap<Value, LayoutAttr> &on,
                              Value value) {
    LayoutAttr layout = on.lookup(value);
    return layout ? layout : layout::replicated(value.getContext());
  }
};

/// Whether two runs compute the same with their own values.
class RunComparison {
public:
  RunComparison(const Run &first, const Run &other,
                const Checkpoints &checkpoints, const ValueLayouts &layouts)
      : first(first), other(other), checkpoints(checkpoints),
        layouts(layouts) {}

  bool isEqual();

private:
  bool opsEqual(Operation *a, Operation *b, bool isLast);
  bool valuesCorrespond(Value a, Value b) const;

  const Run &first, &other;
  const Checkpoints &checkpoints;
  const ValueLayouts &layouts;
  /// Values of `first` → the corresponding values of `other`.
  DenseMap<Value, Value> internal;
};
} // namespace

/// `op`'s attributes as every instance of its block has them: paths below
/// the instance, a dropout's offset from the run's base, a pipeline cut
/// after the run's last op left to the call, a checkpoint of its module or
/// layer as the op's own.
static DictionaryAttr normalizedAttributes(Operation *op, const Run &run,
                                           bool isLast,
                                           const Checkpoints &checkpoints) {
  MLIRContext *context = op->getContext();
  NamedAttrList attrs;
  for (NamedAttribute attr : op->getAttrDictionary()) {
    StringRef name = attr.getName().getValue();
    Attribute value = attr.getValue();
    if (isLast && name == LaminaDialect::kPipelineCutAttrName)
      continue;
    auto path = dyn_cast<StringAttr>(value);
    if (path && (name == kPathAttrName || name == LaminaDialect::kModuleAttrName))
      if (StringRef rest = path.getValue(); rest.consume_front(run.instance))
        value = StringAttr::get(context, "*" + rest);
    // A mask's offset from the run's base; no mask, no offset.
    if (auto config = dyn_cast<DropoutAttr>(value))
      value = config.withOffset(getMaskDropout(op)
                                     ? config.getOffset() - *run.offsetBase
                                     : 0);
    attrs.append(attr.getName(), value);
  }
  if (checkpoints.contains(op))
    attrs.set(LaminaDialect::kCheckpointAttrName, UnitAttr::get(context));
  return attrs.getDictionary(context);
}

bool RunComparison::valuesCorrespond(Value a, Value b) const {
  if (Value mapped = internal.lookup(a))
    return mapped == b;
  // Both read from outside: the same input of the block.
  auto inputA = llvm::find(first.inputs, a);
  auto inputB = llvm::find(other.inputs, b);
  return inputA != first.inputs.end() && inputB != other.inputs.end() &&
         inputA - first.inputs.begin() == inputB - other.inputs.begin();
}

bool RunComparison::opsEqual(Operation *a, Operation *b, bool isLast) {
  if (a->getName() != b->getName() || !layouts.transposeAlike(a, b) ||
      a->getNumOperands() != b->getNumOperands() ||
      a->getNumRegions() != b->getNumRegions() ||
      a->getResultTypes() != b->getResultTypes() ||
      normalizedAttributes(a, first, isLast, checkpoints) !=
          normalizedAttributes(b, other, isLast, checkpoints))
    return false;
  for (auto [operandA, operandB] :
       llvm::zip_equal(a->getOperands(), b->getOperands()))
    if (!valuesCorrespond(operandA, operandB))
      return false;
  for (auto [regionA, regionB] :
       llvm::zip_equal(a->getRegions(), b->getRegions())) {
    if (regionA.getBlocks().size() != regionB.getBlocks().size())
      return false;
    for (auto [blockA, blockB] : llvm::zip_equal(regionA, regionB)) {
      if (blockA.getArgumentTypes() != blockB.getArgumentTypes() ||
          blockA.getOperations().size() != blockB.getOperations().size())
        return false;
      for (auto [argA, argB] :
           llvm::zip_equal(blockA.getArguments(), blockB.getArguments()))
        internal[argA] = argB;
      for (auto [nestedA, nestedB] : llvm::zip_equal(blockA, blockB))
        if (!opsEqual(&nestedA, &nestedB, /*isLast=*/false))
          return false;
    }
  }
  for (auto [resultA, resultB] :
       llvm::zip_equal(a->getResults(), b->getResults()))
    internal[resultA] = resultB;
  return true;
}

bool RunComparison::isEqual() {
  if (first.ops.size() != other.ops.size() ||
      first.inputs.size() != other.inputs.size() ||
      first.outputs.size() != other.outputs.size() ||
      first.offsetBase.has_value() != other.offsetBase.has_value())
    return false;
  for (auto [a, b] : llvm::zip_equal(first.inputs, other.inputs))
    if (a.getType() != b.getType() || !layouts.equal(a, b))
      return false;
  for (auto [index, a] : llvm::enumerate(first.ops))
    if (!opsEqual(a, other.ops[index], a == first.getLast()))
      return false;
  for (auto [a, b] : llvm::zip_equal(first.outputs, other.outputs))
    if (internal.lookup(a) != b)
      return false;
  return true;
}

/// Fills in `run`'s inputs, outputs and offset base.
static void describeRun(Run &run, Block &body) {
  llvm::SmallPtrSet<Operation *, 32> inRun(run.ops.begin(), run.ops.end());
  auto isInside = [&](Value value) {
    if (auto argument = dyn_cast<BlockArgument>(value))
      return argument.getOwner() != &body; // a nested region's argument
    return inRun.contains(body.findAncestorOpInBlock(*value.getDefiningOp()));
  };
  for (Operation *op : run.ops) {
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!isInside(operand))
          run.inputs.insert(operand);
    });
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inRun.contains(body.findAncestorOpInBlock(*user));
          }))
        run.outputs.push_back(result);
    if (DropoutAttr dropout = getMaskDropout(op)) {
      uint64_t offset = dropout.getOffset();
      run.offsetBase = std::min(run.offsetBase.value_or(offset), offset);
    }
  }
}

/// The instance of each of `ops` (a body's, in order): its own, or, for
/// an op that names no module between two ops of one instance, theirs.
static SmallVector<StringRef> assignInstances(ArrayRef<Operation *> ops) {
  SmallVector<StringRef> instances = llvm::map_to_vector(
      ops, [](Operation *op) { return getInstance(op); });
  SmallVector<StringRef> next(ops.size() + 1);
  for (size_t i = ops.size(); i-- > 0;)
    next[i] = instances[i].empty() ? next[i + 1] : instances[i];
  StringRef previous;
  for (auto [i, instance] : llvm::enumerate(instances)) {
    if (instance.empty() && previous == next[i])
      instance = previous;
    if (!instance.empty())
      previous = instance;
  }
  return instances;
}

/// Gives each instance its own copy of the values it builds from constants
/// alone, unnamed, right before their first use in it: a folder or the
/// partitioner makes one such value for several layers, where the layers'
/// ops would otherwise differ. Originals left unused, and values nothing
/// reads, are erased.
static void privatizeRematerializable(Block &body) {
  // Values nothing reads (the partitioner's whole-tensor constants) first.
  SmallVector<Operation *> ops = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  ops = llvm::map_to_vector(body.without_terminator(),
                            [](Operation &op) { return &op; });
  SmallVector<StringRef> instances = assignInstances(ops);
  Rematerializable rematerializable;
  DenseMap<std::pair<StringRef, Value>, Value> copies;
  SmallVector<Operation *> originals;
  for (auto [index, op] : llvm::enumerate(ops)) {
    StringRef instance = instances[index];
    if (instance.empty() || rematerializable(op))
      continue;
    OpBuilder builder(op);
    std::function<Value(Value)> copyOf = [&](Value value) -> Value {
      Operation *def = value.getDefiningOp();
      if (!def || def->getBlock() != &body || !rematerializable(def))
        return value;
      Value &copy = copies[{instance, value}];
      if (copy)
        return copy;
      IRMapping mapping;
      for (Value operand : def->getOperands())
        mapping.map(operand, copyOf(operand));
      Operation *clone = builder.clone(*def, mapping);
      clone->removeAttr(LaminaDialect::kModuleAttrName);
      originals.push_back(def);
      for (auto [old, cloned] :
           llvm::zip_equal(def->getResults(), clone->getResults()))
        copies[{instance, old}] = cloned;
      return copies[{instance, value}];
    };
    op->walk([&](Operation *nested) {
      for (OpOperand &operand : nested->getOpOperands())
        if (Value copy = copyOf(operand.get()); copy != operand.get())
          operand.set(copy);
    });
  }
  for (Operation *original : llvm::reverse(originals))
    if (original->use_empty())
      original->erase();
}

/// The runs of `body`: maximal spans of ops of one instance. Ops that name
/// no module join the run around them; an instance in two runs has none.
static SmallVector<Run> findRuns(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  SmallVector<StringRef> instances = assignInstances(ops);
  SmallVector<Run> runs;
  llvm::StringMap<unsigned> runsOf;
  for (auto [op, instance] : llvm::zip_equal(ops, instances)) {
    if (instance.empty())
      continue;
    if (runs.empty() || runs.back().instance != instance ||
        runs.back().getLast()->getNextNode() != op) {
      runs.push_back({instance, {}, {}, {}, {}});
      ++runsOf[instance];
    }
    runs.back().ops.push_back(op);
  }
  llvm::erase_if(runs, [&](const Run &run) { return runsOf[run.instance] > 1; });
  for (Run &run : runs)
    describeRun(run, body);
  return runs;
}

/// The checkpointed modules that name ops of `group`'s block, as its body
/// (its first instance) names them: those inside an instance, and those
/// holding the whole block.
static SmallVector<Attribute>
getBlockCheckpoints(ArrayRef<Run *> group, ArrayRef<StringRef> checkpointed,
                    MLIRContext *context) {
  StringRef first = group.front()->instance;
  llvm::SetVector<Attribute> modules;
  for (StringRef module : checkpointed) {
    if (isWithinModule(first, module))
      modules.insert(StringAttr::get(context, module));
    for (const Run *run : group)
      if (StringRef rest = module; isWithinModule(rest, run->instance)) {
        rest.consume_front(run->instance);
        modules.insert(StringAttr::get(context, first + rest));
      }
  }
  return modules.takeVector();
}

/// The block function of `group`: its first run's ops with its inputs (and
/// the offset base) as arguments, returning its outputs.
static func::FuncOp createBlockFunction(ArrayRef<Run *> group,
                                        ModuleOp module, SymbolTable &symbols,
                                        ArrayRef<StringRef> checkpointed) {
  const Run &first = *group.front();
  MLIRContext *context = module.getContext();
  SmallVector<Type> argumentTypes(ValueRange(first.inputs.getArrayRef()).getTypes());
  Type i64 = IntegerType::get(context, 64);
  if (first.offsetBase)
    argumentTypes.push_back(i64);
  SmallVector<Type> resultTypes(ValueRange(first.outputs).getTypes());
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  std::string name = first.getList().str();
  std::replace(name.begin(), name.end(), '.', '_');
  auto function = func::FuncOp::create(
      builder, first.ops.front()->getLoc(), name + "_block",
      builder.getFunctionType(argumentTypes, resultTypes));
  function.setPrivate();
  function->setAttr(LaminaDialect::kBlockAttrName,
                    builder.getStringAttr(first.getList()));
  // Checkpoints of modules: the backward reads them on the function.
  if (SmallVector<Attribute> modules =
          getBlockCheckpoints(group, checkpointed, context);
      !modules.empty())
    function->setAttr(LaminaDialect::kCheckpointModulesAttrName,
                      builder.getArrayAttr(modules));
  symbols.insert(function);

  Block *entry = function.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (auto [input, argument] :
       llvm::zip(first.inputs, entry->getArguments()))
    mapping.map(input, argument);
  for (Operation *op : first.ops) {
    Operation *clone = builder.clone(*op, mapping);
    if (op == first.getLast())
      clone->removeAttr(LaminaDialect::kPipelineCutAttrName);
    if (DropoutAttr dropout = getMaskDropout(op))
      setMaskDropout(clone,
                     dropout.withOffset(dropout.getOffset() - *first.offsetBase),
                     entry->getArguments().back());
  }
  SmallVector<Value> results = llvm::map_to_vector(
      first.outputs, [&](Value output) { return mapping.lookup(output); });
  func::ReturnOp::create(builder, function.getLoc(), results);
  return function;
}

/// Replaces `run`'s ops by a call of `function`. `replaced` maps the
/// outputs of runs replaced before to the results of their calls.
static void replaceByCall(Run &run, func::FuncOp function,
                          DenseMap<Value, Value> &replaced) {
  Operation *front = run.ops.front();
  OpBuilder builder(front);
  SmallVector<Value> operands = llvm::map_to_vector(
      run.inputs, [&](Value input) { return replaced.lookup(input) ?: input; });
  if (run.offsetBase)
    operands.push_back(arith::ConstantOp::create(
        builder, front->getLoc(), builder.getI64IntegerAttr(*run.offsetBase)));
  auto call = func::CallOp::create(builder, front->getLoc(), function, operands);
  call->setAttr(LaminaDialect::kModuleAttrName,
                builder.getStringAttr(run.instance));
  if (run.getLast()->hasAttr(LaminaDialect::kPipelineCutAttrName))
    call->setAttr(LaminaDialect::kPipelineCutAttrName, builder.getUnitAttr());
  for (auto [output, result] : llvm::zip_equal(run.outputs, call.getResults())) {
    output.replaceAllUsesWith(result);
    replaced[output] = result;
  }
  for (Operation *op : llvm::reverse(run.ops))
    op->erase();
}

/// The layouts of `function`'s values when it shards them on several
/// ranks (none otherwise), or failure after reporting a layout error.
static FailureOr<ValueLayouts> inferValueLayouts(func::FuncOp function) {
  ValueLayouts layouts;
  if (getWorldSize(function).value_or(1) == 1 || !shardsValues(function))
    return layouts;
  SmallVector<StringRef> axes = llvm::map_to_vector(
      getGridAxes(function),
      [](const GridAxis &axis) { return axis.name.getValue(); });
  if (axes.empty())
    axes.push_back(LaminaDialect::kTensorAxisName);
  for (StringRef axis : axes) {
    FailureOr<DenseMap<Value, LayoutAttr>> onAxis =
        inferLayouts(function, axis);
    if (failed(onAxis))
      return failure();
    // The transposes lamina-generate-backward will choose; a backward it
    // will reject is reported there.
    SmallVector<DerivedSync> derived;
    {
      ScopedDiagnosticHandler silence(function.getContext(),
                                      [](Diagnostic &) { return success(); });
      (void)inferGradientLayouts(function, *onAxis, &derived, {}, axis);
    }
    for (const DerivedSync &sync : derived)
      layouts.derivedSyncs[sync.op].push_back(sync.resolved);
    layouts.perAxis.push_back(std::move(*onAxis));
  }
  return layouts;
}

/// Moves each group of equal instances of `function`'s block lists into one
/// function called once per instance.
static LogicalResult outlineBlockInstances(func::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  Checkpoints checkpoints;
  if (auto modules = function->getAttrOfType<ArrayAttr>(
          LaminaDialect::kCheckpointModulesAttrName))
    llvm::append_range(checkpoints.modules,
                       modules.getAsValueRange<StringAttr>());
  privatizeRematerializable(function.getBody().front());
  FailureOr<ValueLayouts> layouts = inferValueLayouts(function);
  if (failed(layouts))
    return failure();
  SmallVector<Run> runs = findRuns(function.getBody().front());
  // Each list's runs, grouped by equality with the group's first.
  llvm::MapVector<StringRef, SmallVector<SmallVector<Run *>>> groups;
  for (Run &run : runs) {
    SmallVector<SmallVector<Run *>> &listGroups = groups[run.getList()];
    auto group = llvm::find_if(listGroups, [&](ArrayRef<Run *> group) {
      return RunComparison(*group.front(), run, checkpoints, *layouts)
          .isEqual();
    });
    if (group == listGroups.end())
      listGroups.push_back({&run});
    else
      group->push_back(&run);
  }
  DenseMap<Value, Value> replaced;
  for (auto &listGroups : llvm::make_second_range(groups))
    for (ArrayRef<Run *> group : listGroups) {
      if (group.size() < 2)
        continue;
      func::FuncOp block =
          createBlockFunction(group, module, symbols, checkpoints.modules);
      for (Run *run : group)
        replaceByCall(*run, block, replaced);
    }
  return success();
}

namespace {
struct LaminaOutlineBlocksPass
    : mlir::lamina::impl::LaminaOutlineBlocksBase<LaminaOutlineBlocksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration() && function.getBody().hasOneBlock() &&
          !function->hasAttr(LaminaDialect::kBlockAttrName))
        functions.push_back(function);
    for (func::FuncOp function : functions)
      if (failed(outlineBlockInstances(function)))
        return signalPassFailure();
  }
};
} // namespace
