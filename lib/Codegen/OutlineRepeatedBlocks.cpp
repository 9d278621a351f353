//===- OutlineRepeatedBlocks.cpp - One function per repeated block --------===//
//
// A model's repeated blocks lower to runs of equal segments in their
// function's body. The longest such run is found on op hashes (a tandem
// repeat search, quadratic in the body's length but a hash comparison per
// step), each repetition is checked against the first op by op and use by
// use, and the segment moves into one private function called once per
// repetition.
//
//===----------------------------------------------------------------------===//

#include "lamina/Codegen/Passes.h"

#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAOUTLINEREPEATEDBLOCKS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {

/// Ops any function can rebuild (constants, empty tensors of static
/// shape, fills of them): they stay out of the segments, and a segment's
/// function clones them when every repetition reads the same. (CSE leaves
/// one fill of a shape for the whole function, in the first layer that
/// needs it: without this, the first layer would differ from the others.)
bool isRematerializable(Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureTensorSemantics() &&
           llvm::all_of(fill->getOperands(), [](Value operand) {
             Operation *def = operand.getDefiningOp();
             return def && isRematerializable(def);
           });
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         (op->hasTrait<OpTrait::ConstantLike>() || isa<tensor::EmptyOp>(op));
}

/// `value`, rebuilt at `builder`'s insertion point with what it is made
/// of (once: `mapping` remembers).
Value rematerialize(OpBuilder &builder, Value value, IRMapping &mapping) {
  if (Value known = mapping.lookupOrNull(value))
    return known;
  Operation *op = value.getDefiningOp();
  for (Value operand : op->getOperands())
    rematerialize(builder, operand, mapping);
  return builder.clone(*op, mapping)
      ->getResult(cast<OpResult>(value).getResultNumber());
}

/// What an op computes, its operands set aside: name, attributes, types
/// and the names of the ops in its regions. Equal ops hash equally.
llvm::hash_code hashOp(Operation *op) {
  llvm::hash_code hash = OperationEquivalence::computeHash(
      op, OperationEquivalence::ignoreHashValue,
      OperationEquivalence::ignoreHashValue,
      OperationEquivalence::IgnoreLocations);
  for (Type type : op->getOperandTypes())
    hash = llvm::hash_combine(hash, type);
  op->walk([&](Operation *nested) {
    if (nested != op)
      hash = llvm::hash_combine(hash, nested->getName());
  });
  return hash;
}

/// A run of `count` equal segments of `length` ops from `start`.
struct Run {
  size_t start = 0, length = 0, count = 0;
  size_t saved() const { return count ? (count - 1) * length : 0; }
};

/// The run of equal consecutive segments (of at least `minLength`) that
/// saves the most ops; among runs that save as many, the shortest segment,
/// then the earliest start.
Run findLongestRun(ArrayRef<llvm::hash_code> hashes, size_t minLength) {
  Run best;
  size_t size = hashes.size();
  for (size_t length = std::max<size_t>(minLength, 1); 2 * length <= size;
       ++length) {
    // From the back: `equal` counts the positions from i on whose op
    // equals the one a segment further.
    size_t equal = 0;
    for (size_t i = size - length; i-- > 0;) {
      equal = hashes[i] == hashes[i + length] ? equal + 1 : 0;
      Run run{i, length, 1 + equal / length};
      if (run.count < 2)
        continue;
      if (run.saved() > best.saved() ||
          (run.saved() == best.saved() && run.length == best.length))
        best = run;
    }
  }
  return best;
}

/// One repetition: its ops, and how they read values.
struct Segment {
  ArrayRef<Operation *> ops;
  /// The values it reads from outside, in the order of their first use.
  SmallVector<Value> inputs;
  /// Each use, in walk order: {0, op, result} for a value of its own ops,
  /// {1, input, 0} for one from outside.
  SmallVector<std::array<int64_t, 3>> uses;
  /// Its ops' values read after it, as {op, result}.
  SmallVector<std::pair<int64_t, int64_t>> escaping;
};

/// `ops`, read: their inputs, uses and escaping values. `body` is the
/// function's body: values defined there (not inside an op) are the ones
/// a segment can read from outside.
Segment describe(ArrayRef<Operation *> ops, Region *body) {
  Segment segment;
  segment.ops = ops;
  DenseMap<Operation *, int64_t> position;
  for (auto [index, op] : llvm::enumerate(ops))
    position[op] = int64_t(index);
  llvm::MapVector<Value, int64_t> inputs;
  auto use = [&](Value value) {
    if (value.getParentRegion() != body)
      return; // defined inside the op itself
    if (auto result = dyn_cast<OpResult>(value)) {
      auto it = position.find(result.getOwner());
      if (it != position.end()) {
        segment.uses.push_back({0, it->second, result.getResultNumber()});
        return;
      }
    }
    auto [it, inserted] = inputs.try_emplace(value, int64_t(inputs.size()));
    segment.uses.push_back({1, it->second, 0});
  };
  for (Operation *op : ops)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        use(operand);
    });
  segment.inputs = llvm::to_vector(llvm::make_first_range(inputs));
  // A use escapes when its owner, as seen from the body, is not one of
  // the segment's ops.
  for (auto [index, op] : llvm::enumerate(ops))
    for (OpResult result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !position.contains(body->findAncestorOpInRegion(*user));
          }))
        segment.escaping.push_back({int64_t(index), result.getResultNumber()});
  return segment;
}

/// Whether `a` and `b` compute the same from corresponding values: the
/// values they read from the body are compared by the segments' uses.
bool equivalentOps(Operation *a, Operation *b, Region *body) {
  DenseMap<Value, Value> equivalent;
  return OperationEquivalence::isEquivalentTo(
      a, b,
      [&](Value lhs, Value rhs) -> LogicalResult {
        if (lhs.getParentRegion() == body && rhs.getParentRegion() == body)
          return success();
        auto it = equivalent.find(lhs);
        return success(it != equivalent.end() && it->second == rhs);
      },
      [&](Value lhs, Value rhs) { equivalent[lhs] = rhs; },
      OperationEquivalence::IgnoreLocations);
}

/// Whether `other` repeats `first`: the same ops, reading their values
/// the same way.
bool repeats(const Segment &first, const Segment &other, Region *body) {
  if (first.uses != other.uses || first.inputs.size() != other.inputs.size())
    return false;
  for (auto [a, b] : llvm::zip_equal(first.ops, other.ops))
    if (!equivalentOps(a, b, body))
      return false;
  return true;
}

/// Whether input `index` is the same rebuildable value in every segment
/// (then the function clones it instead of taking it).
bool isSharedConstant(ArrayRef<Segment> segments, size_t index) {
  Operation *first = segments.front().inputs[index].getDefiningOp();
  if (!first || !isRematerializable(first))
    return false;
  return llvm::all_of(segments, [&](const Segment &segment) {
    Operation *op = segment.inputs[index].getDefiningOp();
    return op && (op == first || OperationEquivalence::isEquivalentTo(
                                     first, op,
                                     OperationEquivalence::IgnoreLocations));
  });
}

/// The escaping values of all segments, as {op, result}, in order.
SmallVector<std::pair<int64_t, int64_t>>
escapingOfAny(ArrayRef<Segment> segments) {
  llvm::SmallSetVector<std::pair<int64_t, int64_t>, 16> escaping;
  for (const Segment &segment : segments)
    escaping.insert(segment.escaping.begin(), segment.escaping.end());
  SmallVector<std::pair<int64_t, int64_t>> sorted(escaping.begin(),
                                                  escaping.end());
  llvm::sort(sorted);
  return sorted;
}

/// Moves `segments` (repetitions of the first) into one new function
/// next to `function`, and calls it in their place.
void outline(func::FuncOp function, ArrayRef<Segment> segments,
             SymbolTable &symbols) {
  const Segment &first = segments.front();
  SmallVector<std::pair<int64_t, int64_t>> escaping = escapingOfAny(segments);
  SmallVector<bool> cloned;
  SmallVector<Type> argumentTypes, resultTypes;
  for (auto [index, input] : llvm::enumerate(first.inputs)) {
    cloned.push_back(isSharedConstant(segments, index));
    if (!cloned.back())
      argumentTypes.push_back(input.getType());
  }
  for (auto [op, result] : escaping)
    resultTypes.push_back(first.ops[op]->getResult(result).getType());

  OpBuilder builder(function.getContext());
  Location loc = first.ops.front()->getLoc();
  auto block = func::FuncOp::create(
      builder, loc, (function.getSymName() + "_block").str(),
      builder.getFunctionType(argumentTypes, resultTypes));
  block.setPrivate();
  // Called once per repetition, it must stay a function: inlined, LLVM
  // would see every layer again.
  block->setAttr("passthrough", builder.getStrArrayAttr({"noinline"}));
  symbols.insert(block, std::next(Block::iterator(function)));
  Block *entry = block.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  IRMapping mapping;
  unsigned argument = 0;
  for (auto [input, clone] : llvm::zip_equal(first.inputs, cloned))
    if (clone)
      rematerialize(builder, input, mapping);
    else
      mapping.map(input, entry->getArgument(argument++));
  for (Operation *op : first.ops)
    builder.clone(*op, mapping);
  SmallVector<Value> results;
  for (auto [op, result] : escaping)
    results.push_back(mapping.lookup(first.ops[op]->getResult(result)));
  func::ReturnOp::create(builder, loc, results);

  // A segment reads what an earlier one's call now returns.
  DenseMap<Value, Value> replaced;
  for (const Segment &segment : segments) {
    SmallVector<Value> arguments;
    for (auto [input, clone] : llvm::zip_equal(segment.inputs, cloned))
      if (!clone)
        arguments.push_back(replaced.lookup_or(input, input));
    builder.setInsertionPointAfter(segment.ops.back());
    auto call = func::CallOp::create(builder, segment.ops.front()->getLoc(),
                                     block, arguments);
    llvm::SmallPtrSet<Operation *, 32> own(segment.ops.begin(),
                                           segment.ops.end());
    Region *body = &function.getBody();
    for (auto [value, replacement] :
         llvm::zip_equal(escaping, call.getResults())) {
      Value original = segment.ops[value.first]->getResult(value.second);
      original.replaceUsesWithIf(replacement, [&](OpOperand &use) -> bool {
        return !own.contains(body->findAncestorOpInRegion(*use.getOwner()));
      });
      replaced[original] = replacement;
    }
    for (Operation *op : llvm::reverse(segment.ops))
      op->erase();
  }
}

/// Outlines the longest run of repeated segments of `function`'s body, if
/// any has at least `minOps` ops per segment and two repetitions.
void outlineRepeatedBlocks(func::FuncOp function, size_t minOps,
                           SymbolTable &symbols) {
  if (!function.getBody().hasOneBlock())
    return;
  Block &body = function.getBody().front();
  SmallVector<Operation *> ops;
  SmallVector<llvm::hash_code> hashes;
  for (Operation &op : body.without_terminator()) {
    if (isRematerializable(&op))
      continue;
    ops.push_back(&op);
    hashes.push_back(hashOp(&op));
  }
  Run run = findLongestRun(hashes, minOps);
  if (run.count < 2)
    return;
  ArrayRef<Operation *> all(ops);
  Region *region = &function.getBody();
  Segment first = describe(all.slice(run.start, run.length), region);
  SmallVector<Segment> segments{first};
  for (size_t i = 1; i < run.count; ++i) {
    Segment other = describe(
        all.slice(run.start + i * run.length, run.length), region);
    if (repeats(first, other, region))
      segments.push_back(std::move(other));
  }
  if (segments.size() >= 2)
    outline(function, segments, symbols);
}

struct LaminaOutlineRepeatedBlocksPass
    : lamina::impl::LaminaOutlineRepeatedBlocksBase<
          LaminaOutlineRepeatedBlocksPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto function : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (function.isExternal())
        continue;
      // Module paths (for schedules and checkpoints, done by now) name
      // each layer: not what its ops compute.
      function.walk([](Operation *op) {
        op->removeDiscardableAttr(LaminaDialect::kModuleAttrName);
      });
      outlineRepeatedBlocks(function, minOps, symbols);
    }
  }
};

} // namespace
