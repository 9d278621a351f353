//===- MlirMutator.cpp - Mutations of parsed IR for libFuzzer -------------===//
//
// Byte-level mutations of IR text mostly yield text the parser rejects, so
// the pipelines behind it are rarely reached. This mutator parses the input
// and changes the IR instead: an integer, float or string somewhere in an
// op's attributes, a tensor's shape or element type, an operand replaced by
// another value, an op bypassed, erased or duplicated. The result is printed
// back in generic form, unverified (the harness's verifiers see it). Inputs
// that are not valid IR, and one mutation in four, get libFuzzer's own
// byte-level mutations (with the dictionary).
//
//===----------------------------------------------------------------------===//

#include "FuzzHarness.h"

#include "lamina/Support/ParseModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <random>

using namespace mlir;
using mlir::lamina::verifyGuarded;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

class IrMutator {
public:
  IrMutator(ModuleOp module, unsigned seed) : module(module), rng(seed) {
    module->walk([&](Operation *op) {
      if (op != module.getOperation())
        ops.push_back(op);
    });
  }

  /// Applies one mutation; false when the chosen one found nothing to do.
  bool mutate() {
    if (ops.empty())
      return false;
    switch (pick(8)) {
    case 0:
      return mutateAttribute<IntegerAttr>(
          [&](IntegerAttr attr) { return mutateInteger(attr); });
    case 1:
      return mutateAttribute<FloatAttr>([&](FloatAttr attr) {
        static const double kValues[] = {0.0, -1.0, 0.5,      1.0, 1.5,
                                         2.0, NAN,  INFINITY, 1e30};
        return FloatAttr::get(attr.getType(), kValues[pick(9)]);
      });
    case 2:
      return mutateAttribute<StringAttr>(
          [&](StringAttr attr) { return mutateString(attr); });
    case 3:
      return mutateAttribute<DenseI64ArrayAttr>([&](DenseI64ArrayAttr attr) {
        SmallVector<int64_t> values(attr.asArrayRef());
        if (values.empty())
          values.push_back(0);
        values[pick(values.size())] = interestingInteger(values.front());
        return DenseI64ArrayAttr::get(attr.getContext(), values);
      });
    case 4:
      return mutateTensorType();
    case 5:
      return replaceOperand();
    case 6:
      return removeOp();
    default:
      return duplicateOp();
    }
  }

private:
  ModuleOp module;
  std::mt19937 rng;
  SmallVector<Operation *> ops;

  size_t pick(size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  }
  Operation *pickOp() { return ops[pick(ops.size())]; }

  int64_t interestingInteger(int64_t value) {
    static const int64_t kValues[] = {
        0,  1,  -1,  2,         3,         4,         7,        8,
        16, 64, 255, INT32_MAX, 1LL << 32, INT64_MAX, INT64_MIN};
    // Wrapping arithmetic: the values are meant to reach the edges.
    uint64_t bits = static_cast<uint64_t>(value);
    switch (pick(4)) {
    case 0:
      return static_cast<int64_t>(pick(2) ? bits + 1 : bits - 1);
    case 1:
      return static_cast<int64_t>(bits * 2);
    default:
      return kValues[pick(std::size(kValues))];
    }
  }

  Attribute mutateInteger(IntegerAttr attr) {
    unsigned width =
        attr.getType().isIndex() ? 64 : attr.getType().getIntOrFloatBitWidth();
    int64_t value = interestingInteger(attr.getValue().getSExtValue());
    return IntegerAttr::get(attr.getType(),
                            APInt(width, static_cast<uint64_t>(value),
                                  /*isSigned=*/true, /*implicitTrunc=*/true));
  }

  Attribute mutateString(StringAttr attr) {
    static const char *kValues[] = {
        "",           "weight",         "bias",     "all_reduce",
        "all_gather", "reduce_scatter", "scatter",  "fwd_pre",
        "fwd_post",   "bwd_pre",        "bwd_post", "gelu",
        "relu",       "main",           "h.0",      "h.0.mlp.fc_in",
        "x"};
    // Other strings of the same module name layers and functions that exist.
    SmallVector<StringAttr> seen;
    module->walk([&](Operation *op) {
      op->getAttrDictionary().walk(
          [&](StringAttr string) { seen.push_back(string); });
    });
    if (!seen.empty() && pick(2))
      return seen[pick(seen.size())];
    return StringAttr::get(attr.getContext(),
                           kValues[pick(std::size(kValues))]);
  }

  /// Replaces one attribute of kind `AttrT` somewhere in one op's attributes
  /// (nested ones included) by `mutation`'s result, which keeps its kind.
  template <typename AttrT>
  bool mutateAttribute(llvm::function_ref<Attribute(AttrT)> mutation) {
    SmallVector<std::pair<Operation *, int>> candidates;
    for (Operation *op : ops) {
      int count = 0;
      op->getAttrDictionary().walk([&](AttrT) { ++count; });
      for (int i = 0; i < count; ++i)
        candidates.push_back({op, i});
    }
    if (candidates.empty())
      return false;
    auto [op, target] = candidates[pick(candidates.size())];
    int index = 0;
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](AttrT attr) -> std::optional<Attribute> {
      if (index++ != target)
        return std::nullopt;
      return mutation(attr);
    });
    op->setAttrs(
        cast<DictionaryAttr>(replacer.replace(op->getAttrDictionary())));
    return true;
  }

  Type mutateElementType(Type element) {
    MLIRContext *context = element.getContext();
    SmallVector<Type> choices = {
        Float32Type::get(context),     Float16Type::get(context),
        BFloat16Type::get(context),    Float64Type::get(context),
        IntegerType::get(context, 64), IntegerType::get(context, 1)};
    module->walk([&](Operation *op) {
      for (Type type : op->getResultTypes())
        if (auto tensor = dyn_cast<RankedTensorType>(type))
          choices.push_back(tensor.getElementType());
    });
    return choices[pick(choices.size())];
  }

  bool mutateTensorType() {
    SmallVector<Value> values;
    module->walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (isa<RankedTensorType>(result.getType()))
          values.push_back(result);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument argument : block.getArguments())
            if (isa<RankedTensorType>(argument.getType()))
              values.push_back(argument);
    });
    if (values.empty())
      return false;
    Value value = values[pick(values.size())];
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    Type element = type.getElementType();
    switch (pick(4)) {
    case 0:
      if (shape.empty())
        return false;
      shape[pick(shape.size())] =
          pick(4) == 0 ? ShapedType::kDynamic
                       : interestingInteger(shape.front()) & ((1LL << 40) - 1);
      break;
    case 1:
      if (shape.empty())
        return false;
      shape.erase(shape.begin() + pick(shape.size()));
      break;
    case 2:
      shape.insert(shape.begin() + pick(shape.size() + 1), 1 + pick(4));
      break;
    default:
      element = mutateElementType(element);
      break;
    }
    value.setType(RankedTensorType::get(shape, element, type.getEncoding()));
    syncFunctionTypes();
    return true;
  }

  /// Keeps each function's type in step with its entry block and returns,
  /// so that a changed type is seen by the ops using it, not rejected at
  /// the function.
  void syncFunctionTypes() {
    module->walk([&](func::FuncOp function) {
      if (function.isExternal())
        return;
      SmallVector<Type> results(function.getResultTypes());
      function.walk([&](func::ReturnOp ret) {
        results.assign(ret.getOperandTypes().begin(),
                       ret.getOperandTypes().end());
      });
      function.setFunctionType(FunctionType::get(
          function.getContext(), function.front().getArgumentTypes(), results));
    });
  }

  bool replaceOperand() {
    Operation *op = pickOp();
    if (op->getNumOperands() == 0)
      return false;
    OpOperand &operand = op->getOpOperand(pick(op->getNumOperands()));
    // Mostly a value of the same type that dominates the use; sometimes any.
    bool sameType = pick(8) != 0;
    DominanceInfo dominance(module);
    SmallVector<Value> candidates;
    module->walk([&](Operation *def) {
      for (Value result : def->getResults())
        if (result != operand.get() &&
            (!sameType || result.getType() == operand.get().getType()) &&
            dominance.properlyDominates(result, op))
          candidates.push_back(result);
    });
    for (Block *block = op->getBlock(); block;
         block = block->getParentOp() ? block->getParentOp()->getBlock()
                                      : nullptr)
      for (BlockArgument argument : block->getArguments())
        if (argument != operand.get() &&
            (!sameType || argument.getType() == operand.get().getType()))
          candidates.push_back(argument);
    if (candidates.empty())
      return false;
    operand.set(candidates[pick(candidates.size())]);
    syncFunctionTypes();
    return true;
  }

  /// Erases an unused op, or bypasses one whose result has an operand's
  /// type (a layer taken out of the model).
  bool removeOp() {
    Operation *op = pickOp();
    if (op->hasTrait<OpTrait::IsTerminator>() || isa<func::FuncOp>(op))
      return false;
    if (op->use_empty()) {
      op->erase();
      return true;
    }
    if (op->getNumResults() != 1)
      return false;
    for (Value operand : op->getOperands()) {
      if (operand.getType() != op->getResult(0).getType())
        continue;
      op->getResult(0).replaceAllUsesWith(operand);
      op->erase();
      return true;
    }
    return false;
  }

  /// Clones an op after itself and gives some of its uses the copy: the
  /// same computation twice, results used twice.
  bool duplicateOp() {
    Operation *op = pickOp();
    if (op->hasTrait<OpTrait::IsTerminator>() || isa<func::FuncOp>(op) ||
        op->getNumResults() == 0)
      return false;
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    Operation *copy = builder.clone(*op);
    for (auto [original, duplicate] :
         llvm::zip(op->getResults(), copy->getResults()))
      original.replaceUsesWithIf(duplicate, [&](OpOperand &use) {
        return use.getOwner() != copy && pick(2);
      });
    return true;
  }
};

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  if (seed % 4 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::unique_ptr<MLIRContext> context = mlir::lamina::fuzz::makeContext();
  ScopedDiagnosticHandler silence(context.get(),
                                  [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = mlir::lamina::fuzz::parseModule(
      *context, mlir::lamina::fuzz::asText(data, size));
  // Only valid IR is mutated structurally: the mutations read what the
  // verifiers guarantee (a function's type, dominance).
  if (!module || failed(verifyGuarded(*module)))
    return LLVMFuzzerMutate(data, size, maxSize);

  IrMutator mutator(*module, seed);
  bool mutated = false;
  for (int attempt = 0; attempt < 8 && !mutated; ++attempt)
    mutated = mutator.mutate();
  if (!mutated)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::string text;
  llvm::raw_string_ostream stream(text);
  // Generic form, unverified: the mutated IR is verified by the harness,
  // where a crashing verifier leaves the input behind.
  module->print(stream,
                OpPrintingFlags().printGenericOpForm().assumeVerified());
  if (text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}
