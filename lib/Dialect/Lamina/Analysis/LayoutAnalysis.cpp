//===- LayoutAnalysis.cpp - Layout inference and checking -----------------===//
//
// Walks a function in order and gives every value the layout the rules of
// LayoutRules.h assign; the first rule that rejects its operands becomes an
// error on the op.
//
//===----------------------------------------------------------------------===//

#include "lamina/Lamina/Analysis/LayoutAnalysis.h"
#include "lamina/Lamina/Analysis/LayoutRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::layout;

/// A tensor.empty, or a linalg.fill of one: a value each rank can build at
/// its own shape.
static bool isFreshTensor(Value value) {
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    value = fill.getDpsInits()[0];
  return value.getDefiningOp<tensor::EmptyOp>() != nullptr;
}

namespace {
/// Propagates layouts through one function, reporting the first error.
class LayoutChecker {
public:
  explicit LayoutChecker(MLIRContext *context) : context(context) {}

  LogicalResult run(func::FuncOp function);
  DenseMap<Value, LayoutAttr> takeLayouts() { return std::move(layouts); }

private:
  LayoutAttr get(Value value) {
    LayoutAttr layout = layouts.lookup(value);
    return layout ? layout : replicated(context);
  }
  /// Gives every result of `op` the rule's layout, or reports its reason.
  LogicalResult assign(Operation *op, const LayoutOrError &rule) {
    if (rule.failed())
      return op->emitOpError(rule.getReason());
    for (Value result : op->getResults())
      layouts[result] = rule.get();
    return success();
  }
  LogicalResult check(Operation *op, const Check &problem) {
    return problem ? op->emitOpError(*problem) : success();
  }
  static StringRef pathOf(std::optional<StringRef> path) {
    return path.value_or("");
  }
  /// The rule of ops without one of their own, on `op`'s operands.
  LayoutOrError otherLayout(Operation *op) {
    return otherOpLayout(op,
                         llvm::map_to_vector(op->getOperands(),
                                             [&](Value v) { return get(v); }));
  }
  int64_t rankOf(Value value) {
    return cast<RankedTensorType>(value.getType()).getRank();
  }
  LogicalResult visit(Operation *op);

  MLIRContext *context;
  DenseMap<Value, LayoutAttr> layouts;
};
} // namespace

LogicalResult LayoutChecker::visit(Operation *op) {
  if (auto layer = dyn_cast<LinearLayerOpInterface>(op)) {
    LinearLayerParts parts = layer.getLayerParts();
    return assign(op, linearLayerLayout(
                          parts, get(parts.input), get(parts.weight),
                          parts.bias ? get(parts.bias) : LayoutAttr()));
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MatmulOp matmul) {
        return assign(op, matmulLayout(get(matmul.getInput()),
                                       get(matmul.getWeight()),
                                       rankOf(matmul.getInput())));
      })
      .Case([&](SyncOp sync) {
        return assign(op, syncLayout(sync.getSpec(), get(sync.getInput()),
                                     pathOf(sync.getPath())));
      })
      .Case([&](BiasAddOp biasAdd) {
        LayoutAttr in = get(biasAdd.getInput());
        if (failed(check(op, checkBias(in, get(biasAdd.getBias()),
                                       biasAdd.getType().getRank(),
                                       pathOf(biasAdd.getPath())))))
          return failure();
        return assign(op, in);
      })
      .Case([&](ActivationOp activation) {
        LayoutAttr in = get(activation.getInput());
        if (failed(check(op, checkNotPartial(in, "applies an activation to",
                                             pathOf(activation.getPath())))))
          return failure();
        return assign(op, in);
      })
      .Case([&](DropoutOp dropout) {
        LayoutAttr in = get(dropout.getInput());
        if (failed(check(op, checkNotPartial(in, "applies dropout to",
                                             pathOf(dropout.getPath())))) ||
            failed(check(op, checkDropout(dropout.getConfig(), in))))
          return failure();
        return assign(op, in);
      })
      .Case([&](FusedQKVOp qkv) {
        return assign(op, fusedQkvLayout(get(qkv.getInput()),
                                         get(qkv.getWeight()),
                                         get(qkv.getBias()),
                                         rankOf(qkv.getQ()) - 2));
      })
      .Case([&](LayerNormOp norm) {
        Value weight = norm.getWeight(), bias = norm.getBias();
        return assign(op, layerNormLayout(
                              get(norm.getInput()),
                              weight ? get(weight) : LayoutAttr(),
                              bias ? get(bias) : LayoutAttr(),
                              rankOf(norm.getInput()), norm.getPath()));
      })
      .Case([&](SoftmaxOp softmax) {
        return assign(op, softmaxLayout(get(softmax.getInput()),
                                        softmax.getDim(),
                                        pathOf(softmax.getPath())));
      })
      .Case([&](tensor::CollapseShapeOp collapse) {
        return assign(op, collapseLayout(get(collapse.getSrc()),
                                         collapse.getReassociationIndices(),
                                         collapse.getSrcType().getShape()));
      })
      .Case([&](tensor::ExpandShapeOp expand) {
        return assign(op, expandLayout(get(expand.getSrc()),
                                       expand.getReassociationIndices(),
                                       expand.getResultType().getShape()));
      })
      .Case([&](tensor::ExtractSliceOp slice) -> LogicalResult {
        LayoutAttr in = get(slice.getSource());
        if (in.getKind() == LayoutKind::sharded &&
            (slice.getSourceType().getRank() != slice.getType().getRank() ||
             ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
             ShapedType::isDynamicShape(slice.getStaticSizes()) ||
             ShapedType::isDynamicShape(slice.getStaticStrides())))
          return op->emitOpError("slices a sharded value with dynamic or "
                                 "rank-reducing bounds; all_gather it first");
        return assign(op, sliceLayout(in, slice.getStaticOffsets(),
                                      slice.getStaticSizes(),
                                      slice.getStaticStrides(),
                                      slice.getSourceType().getShape()));
      })
      .Case([&](tensor::InsertSliceOp insert) -> LogicalResult {
        if (ShapedType::isDynamicShape(insert.getStaticOffsets()) ||
            ShapedType::isDynamicShape(insert.getStaticSizes()) ||
            ShapedType::isDynamicShape(insert.getStaticStrides()) ||
            insert.getSourceType().getRank() != insert.getType().getRank())
          return assign(op, otherLayout(op));
        Value dest = insert.getDest();
        bool fresh = isFreshTensor(dest);
        return assign(op, insertSliceLayout(
                              get(insert.getSource()), get(dest), fresh,
                              insert.getStaticOffsets(),
                              insert.getStaticSizes(),
                              insert.getStaticStrides(),
                              insert.getType().getShape()));
      })
      .Case([&](linalg::TransposeOp transpose) {
        return assign(op, transposeLayout(get(transpose.getInput()),
                                          transpose.getPermutation()));
      })
      .Case([&](linalg::BatchMatmulOp matmul) {
        if (matmul.getNumDpsInputs() != 2 || matmul.hasUserDefinedMaps())
          return assign(op, otherLayout(op));
        return assign(op, batchMatmulLayout(get(matmul.getDpsInputs()[0]),
                                            get(matmul.getDpsInputs()[1])));
      })
      .Case([&](EmbeddingOp embedding) {
        return assign(op, embeddingLayout(get(embedding.getInput()),
                                          get(embedding.getWeight()),
                                          embedding.getPath()));
      })
      .Case([&](EmbeddingGradOp grad) -> LogicalResult {
        for (Value operand : {grad.getInput(), grad.getCotangent()})
          if (!isReplicated(get(operand)))
            return op->emitOpError("takes ")
                   << get(operand)
                   << " indices or cotangents; an embedding's gradient "
                      "needs them replicated";
        auto declared =
            grad->getAttrOfType<LayoutAttr>(LaminaDialect::kLayoutAttrName);
        return assign(op, declared ? declared : replicated(context));
      })
      .Case([&](CrossEntropyOp loss) {
        return assign(op, crossEntropyLayout(get(loss.getLogits()),
                                             get(loss.getTargets()),
                                             pathOf(loss.getPath())));
      })
      .Case([&](MaskedFillOp fill) {
        return assign(op, maskedFillLayout(get(fill.getInput()),
                                           get(fill.getMask()),
                                           fill.getMask().getType().getShape()));
      })
      .Case([&](func::ReturnOp ret) {
        for (auto [index, value] : llvm::enumerate(ret.getOperands()))
          if (failed(check(op, checkResult(get(value), index))))
            return failure();
        return success();
      })
      .Default([&](Operation *other) {
        return assign(other, otherLayout(other));
      });
}

LogicalResult LayoutChecker::run(func::FuncOp function) {
  for (BlockArgument argument : function.getArguments())
    if (LayoutAttr layout = getDeclaredLayout(argument))
      layouts[argument] = layout;
  WalkResult result = function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == function.getOperation())
      return WalkResult::advance();
    if (failed(visit(op)))
      return WalkResult::interrupt();
    // Regions of other ops (linalg bodies) are checked as a whole above.
    return op->getNumRegions() ? WalkResult::skip() : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

FailureOr<DenseMap<Value, LayoutAttr>>
mlir::lamina::inferLayouts(func::FuncOp function) {
  LayoutChecker checker(function.getContext());
  if (failed(checker.run(function)))
    return failure();
  return checker.takeLayouts();
}

FailureOr<FunctionLayouts> mlir::lamina::inferLayouts(ModuleOp module) {
  FunctionLayouts result;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isDeclaration())
      continue;
    FailureOr<DenseMap<Value, LayoutAttr>> layouts = inferLayouts(function);
    if (failed(layouts))
      return failure();
    result.emplace_back(function, std::move(*layouts));
  }
  return result;
}
