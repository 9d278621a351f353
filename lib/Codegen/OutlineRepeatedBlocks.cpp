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
#include "lamina/Support/Rematerializable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAOUTLINEREPEATEDBLOCKS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {

/// `value`, rebuilt at `builder`'s insertion point with what it is made
/// of (once: `mapping` remembers).
Value rematerialize(OpBuilder &builder, Value value, IRMapping &mapping) {
  if (Value known = mapping.lookupOrNull(value))
    return known;
  Operation *op = value.getDefiningOp();
  for (Value read : getValuesReadBy(op))
    rematerialize(builder, read, mapping);
  builder.clone(*op, mapping);
  return mapping.lookup(value);
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
  /// The rebuildable values it reads, one per use (CSE may have merged a
  /// layer's constant with an unrelated one of equal value in one layer
  /// and not in another: identity says nothing about them).
  SmallVector<Value> constants;
  /// Each use, in walk order: {0, op, result} for a value of its own ops,
  /// {1, input, 0} for one from outside, {2, constant, 0} for a
  /// rebuildable one.
  SmallVector<std::array<int64_t, 3>> uses;
  /// Its ops' values read after it, as {op, result}.
  SmallVector<std::pair<int64_t, int64_t>> escaping;
};

/// Calls `visit(op, operand index, value)` for each value `ops` read from
/// `body` (not from inside an op), in one fixed order.
void forEachRead(ArrayRef<Operation *> ops, Region *body,
                 function_ref<void(Operation *, unsigned, Value)> visit) {
  for (Operation *op : ops)
    op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
      for (OpOperand &operand : nested->getOpOperands())
        if (operand.get().getParentRegion() == body)
          visit(nested, operand.getOperandNumber(), operand.get());
    });
}

/// `ops`, read: their inputs, constants, uses and escaping values. `body`
/// is the function's body: values defined there (not inside an op) are the
/// ones a segment can read from outside.
Segment describe(ArrayRef<Operation *> ops, Region *body,
                 Rematerializable &rematerializable) {
  Segment segment;
  segment.ops = ops;
  DenseMap<Operation *, int64_t> position;
  for (auto [index, op] : llvm::enumerate(ops))
    position[op] = int64_t(index);
  llvm::MapVector<Value, int64_t> inputs;
  forEachRead(ops, body, [&](Operation *, unsigned, Value value) {
    if (auto result = dyn_cast<OpResult>(value)) {
      auto it = position.find(result.getOwner());
      if (it != position.end()) {
        segment.uses.push_back({0, it->second, result.getResultNumber()});
        return;
      }
    }
    if (rematerializable(value)) {
      segment.uses.push_back({2, int64_t(segment.constants.size()), 0});
      segment.constants.push_back(value);
      return;
    }
    auto [it, inserted] = inputs.try_emplace(value, int64_t(inputs.size()));
    segment.uses.push_back({1, it->second, 0});
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
  if (first.uses != other.uses || first.inputs.size() != other.inputs.size() ||
      first.constants.size() != other.constants.size())
    return false;
  for (auto [a, b] : llvm::zip_equal(first.ops, other.ops))
    if (!equivalentOps(a, b, body))
      return false;
  return true;
}

/// Whether `a` and `b` are rebuilt the same: one value, or equal ops
/// (each layer's own fill of its own empty tensor) on values rebuilt the
/// same.
bool rebuiltAlike(Value a, Value b) {
  if (a == b)
    return true;
  Operation *opA = a.getDefiningOp(), *opB = b.getDefiningOp();
  if (!opA || !opB ||
      cast<OpResult>(a).getResultNumber() !=
          cast<OpResult>(b).getResultNumber())
    return false;
  DenseMap<Value, Value> equivalent;
  bool capturedAlike = true;
  bool equal = OperationEquivalence::isEquivalentTo(
      opA, opB,
      [&](Value lhs, Value rhs) -> LogicalResult {
        auto it = equivalent.find(lhs);
        if (it != equivalent.end())
          return success(it->second == rhs);
        // Read from outside the ops: rebuilt alike, in turn.
        capturedAlike &= rebuiltAlike(lhs, rhs);
        return success();
      },
      [&](Value lhs, Value rhs) { equivalent[lhs] = rhs; },
      OperationEquivalence::IgnoreLocations);
  return equal && capturedAlike;
}

/// Whether the rebuildable value of use `index` is rebuilt alike in every
/// segment (then the function rebuilds it instead of taking it).
bool isSharedConstant(ArrayRef<Segment> segments, size_t index) {
  Value first = segments.front().constants[index];
  return llvm::all_of(segments, [&](const Segment &segment) {
    return rebuiltAlike(first, segment.constants[index]);
  });
}

/// The escaping values of all segments, as {op, result}, in order.
SmallVector<std::pair<int64_t, int64_t>>
escapingOfAny(ArrayRef<Segment> segments) {
  SmallVector<std::pair<int64_t, int64_t>> escaping;
  for (const Segment &segment : segments)
    llvm::append_range(escaping, segment.escaping);
  llvm::sort(escaping);
  escaping.erase(llvm::unique(escaping), escaping.end());
  return escaping;
}

/// Whether a value of `segment` read after it is a buffer. A call would
/// return it, and deallocation would hand the caller a copy of what may
/// still be written (an asynchronous runtime call started inside).
bool escapesBuffer(const Segment &segment) {
  return llvm::any_of(segment.escaping, [&](auto escaping) {
    auto [op, result] = escaping;
    return isa<BaseMemRefType>(
        segment.ops[op]->getResult(result).getType());
  });
}

/// Moves `segments` (repetitions of the first) into one new function
/// next to `function`, and calls it in their place. Its arguments: the
/// segments' inputs, then the rebuildable values that differ between
/// them.
void outline(func::FuncOp function, ArrayRef<Segment> segments,
             SymbolTable &symbols) {
  const Segment &first = segments.front();
  Region *body = &function.getBody();
  SmallVector<std::pair<int64_t, int64_t>> escaping = escapingOfAny(segments);
  SmallVector<Type> argumentTypes(first.inputs.size()), resultTypes;
  llvm::transform(first.inputs, argumentTypes.begin(),
                  [](Value input) { return input.getType(); });
  SmallVector<bool> shared;
  for (auto [index, constant] : llvm::enumerate(first.constants)) {
    shared.push_back(isSharedConstant(segments, index));
    if (!shared.back())
      argumentTypes.push_back(constant.getType());
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
  for (auto [input, argument] :
       llvm::zip(first.inputs, entry->getArguments()))
    mapping.map(input, argument);
  SmallVector<Value> constants;
  IRMapping rebuilt;
  unsigned argument = first.inputs.size();
  for (auto [constant, isShared] : llvm::zip_equal(first.constants, shared))
    constants.push_back(isShared ? rematerialize(builder, constant, rebuilt)
                                 : Value(entry->getArgument(argument++)));
  // The clones read the original constants until each use gets its own.
  DenseMap<Operation *, Operation *> cloneOf;
  for (Operation *op : first.ops) {
    Operation *clone = builder.clone(*op, mapping);
    SmallVector<Operation *> originals, clones;
    op->walk<WalkOrder::PreOrder>(
        [&](Operation *nested) { originals.push_back(nested); });
    clone->walk<WalkOrder::PreOrder>(
        [&](Operation *nested) { clones.push_back(nested); });
    for (auto [original, copy] : llvm::zip_equal(originals, clones))
      cloneOf[original] = copy;
  }
  size_t use = 0;
  forEachRead(first.ops, body, [&](Operation *op, unsigned operand, Value) {
    const std::array<int64_t, 3> &how = first.uses[use++];
    if (how[0] == 2)
      cloneOf[op]->setOperand(operand, constants[how[1]]);
  });
  SmallVector<Value> results;
  for (auto [op, result] : escaping)
    results.push_back(mapping.lookup(first.ops[op]->getResult(result)));
  func::ReturnOp::create(builder, loc, results);

  // A segment reads what an earlier one's call now returns.
  DenseMap<Value, Value> replaced;
  for (const Segment &segment : segments) {
    SmallVector<Value> arguments;
    for (Value input : segment.inputs)
      arguments.push_back(replaced.lookup_or(input, input));
    for (auto [constant, isShared] :
         llvm::zip_equal(segment.constants, shared))
      if (!isShared)
        arguments.push_back(constant);
    builder.setInsertionPointAfter(segment.ops.back());
    auto call = func::CallOp::create(builder, segment.ops.front()->getLoc(),
                                     block, arguments);
    llvm::SmallPtrSet<Operation *, 32> own(segment.ops.begin(),
                                           segment.ops.end());
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
  // Values built from constants alone stay out of the segments: a
  // segment's function rebuilds them when every repetition reads the same,
  // else takes them.
  Rematerializable rematerializable;
  SmallVector<Operation *> ops;
  SmallVector<llvm::hash_code> hashes;
  for (Operation &op : body.without_terminator()) {
    if (rematerializable(&op))
      continue;
    ops.push_back(&op);
    hashes.push_back(hashOp(&op));
  }
  Run run = findLongestRun(hashes, minOps);
  if (run.count < 2)
    return;
  ArrayRef<Operation *> all(ops);
  Region *region = &function.getBody();
  auto segment = [&](size_t index) {
    return describe(all.slice(run.start + index * run.length, run.length),
                    region, rematerializable);
  };
  std::vector<Segment> segments{segment(0)};
  for (size_t i = 1; i < run.count; ++i) {
    Segment other = segment(i);
    if (repeats(segments.front(), other, region))
      segments.push_back(std::move(other));
  }
  if (segments.size() >= 2 && llvm::none_of(segments, escapesBuffer))
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
      // Each layer's ops name their layer: not what they compute.
      dropModulePaths(function);
      outlineRepeatedBlocks(function, minOps, symbols);
    }
  }
};

} // namespace
