//===- UpstreamRules.cpp - Reverse-mode rules of upstream ops -------------===//
//
// The upstream ops the importer writes between layers: element-wise arith
// on tensors (residuals, scaling), reshapes, slices, concatenations,
// transposes, the attention batch matmuls, sums, casts between float types,
// and fills (whose cotangent stops there).
//
//===----------------------------------------------------------------------===//

#include "TensorUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

#include "lamina/Lamina/IR/LaminaAutodiffInterface.h"

using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::autodiff;

namespace {
template <typename Model, typename Op>
using Rule = ReverseDifferentiableOpInterface::ExternalModel<Model, Op>;

struct AddFRule : Rule<AddFRule, arith::AddFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *, OpBuilder &,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = dys[0];
    dxs[1] = dys[0];
    return success();
  }
};

struct SubFRule : Rule<SubFRule, arith::SubFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = dys[0];
    dxs[1] = arith::NegFOp::create(b, op->getLoc(), dys[0]);
    return success();
  }
};

struct NegFRule : Rule<NegFRule, arith::NegFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = arith::NegFOp::create(b, op->getLoc(), dys[0]);
    return success();
  }
};

/// A widening cast's cotangent is narrowed back to the source type, as
/// PyTorch's autograd casts the gradient of `x.float()`.
struct ExtFRule : Rule<ExtFRule, arith::ExtFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = arith::TruncFOp::create(b, op->getLoc(),
                                     op->getOperand(0).getType(), dys[0]);
    return success();
  }
};

/// A narrowing cast's cotangent is widened back to the source type.
struct TruncFRule : Rule<TruncFRule, arith::TruncFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    dxs[0] = arith::ExtFOp::create(b, op->getLoc(),
                                   op->getOperand(0).getType(), dys[0]);
    return success();
  }
};

struct MulFRule : Rule<MulFRule, arith::MulFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto mul = cast<arith::MulFOp>(op);
    Location loc = op->getLoc();
    dxs[0] = arith::MulFOp::create(b, loc, dys[0],
                                   state.getPrimal(mul.getRhs()));
    dxs[1] = arith::MulFOp::create(b, loc, dys[0],
                                   state.getPrimal(mul.getLhs()));
    return success();
  }
};

struct DivFRule : Rule<DivFRule, arith::DivFOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto div = cast<arith::DivFOp>(op);
    Location loc = op->getLoc();
    // d(a/b) = da/b − a·db/b² = (da − q·db)/b with q = a/b.
    Value rhs = state.getPrimal(div.getRhs());
    Value quotient = state.getPrimal(div.getResult());
    dxs[0] = arith::DivFOp::create(b, loc, dys[0], rhs);
    dxs[1] = arith::NegFOp::create(
        b, loc, arith::MulFOp::create(b, loc, dxs[0], quotient));
    return success();
  }
};

struct CollapseShapeRule : Rule<CollapseShapeRule, tensor::CollapseShapeOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    if (!collapse.getSrcType().hasStaticShape())
      return op->emitOpError("backward of a reshape needs static shapes");
    dxs[0] = tensor::ExpandShapeOp::create(b, op->getLoc(),
                                           collapse.getSrcType(), dys[0],
                                           collapse.getReassociationIndices());
    return success();
  }
};

struct ExpandShapeRule : Rule<ExpandShapeRule, tensor::ExpandShapeOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    dxs[0] = tensor::CollapseShapeOp::create(
        b, op->getLoc(), expand.getSrcType(), dys[0],
        expand.getReassociationIndices());
    return success();
  }
};

struct TransposeRule : Rule<TransposeRule, linalg::TransposeOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    ArrayRef<int64_t> permutation = transpose.getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, source] : llvm::enumerate(permutation))
      inverse[source] = i;
    dxs[0] = buildTranspose(b, op->getLoc(), dys[0], inverse);
    return success(); // the init is overwritten: no cotangent
  }
};

/// C = A·B (+ the init, which the importer fills with zeros).
template <typename Op, bool Batched>
struct MatmulLikeRule : Rule<MatmulLikeRule<Op, Batched>, Op> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto matmul = cast<Op>(op);
    if (!matmul.hasPureTensorSemantics() || matmul.hasUserDefinedMaps() ||
        matmul.getNumDpsInputs() != 2)
      return op->emitOpError("backward is generated for plain tensor "
                             "matmuls (default indexing maps) only");
    Location loc = op->getLoc();
    Value a = state.getPrimal(matmul.getDpsInputs()[0]);
    Value bm = state.getPrimal(matmul.getDpsInputs()[1]);
    // The last two dims swapped (behind the batch dim, if any).
    SmallVector<int64_t> swap = Batched ? SmallVector<int64_t>{0, 2, 1}
                                        : SmallVector<int64_t>{1, 0};
    // lhs·rhs shaped like `like` (the operand it is the cotangent of),
    // accumulated in the forward's accumulator type: the cotangent of a
    // bf16 operand of a matmul into f32 is summed in f32, then rounded
    // once, as a bf16 matmul's backward with f32 sums does.
    Type accumulator =
        getElementTypeOrSelf(matmul.getDpsInits()[0].getType());
    auto product = [&](Value lhs, Value rhs, Value like) -> Value {
      auto type = cast<RankedTensorType>(like.getType());
      Value zeros = buildZeros(b, loc, tensor::getMixedSizes(b, loc, like),
                               accumulator);
      Value sum = Op::create(b, loc, TypeRange{zeros.getType()},
                             ValueRange{lhs, rhs}, ValueRange{zeros})
                      .getResult(0);
      if (type.getElementType() == accumulator)
        return sum;
      return arith::TruncFOp::create(b, loc, type, sum);
    };
    Value dc = dys[0];
    dxs[0] = product(dc, buildTranspose(b, loc, bm, swap), a);
    dxs[1] = product(buildTranspose(b, loc, a, swap), dc, bm);
    dxs[2] = dc;
    return success();
  }
};

/// Sizes of the forward value `value`: its static shape, or (dynamic) those
/// of its primal, which the backward then keeps.
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc,
                                  ReverseState &state, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.hasStaticShape())
    return getAsIndexOpFoldResult(b.getContext(), type.getShape());
  return tensor::getMixedSizes(b, loc, state.getPrimal(value));
}

/// Zeros of the forward value `value`'s type.
Value zerosOf(OpBuilder &b, Location loc, ReverseState &state, Value value) {
  return buildZeros(b, loc, sizesOf(b, loc, state, value),
                    cast<RankedTensorType>(value.getType()).getElementType());
}

/// A slice: its cotangent placed where it was taken, zeros elsewhere.
struct ExtractSliceRule : Rule<ExtractSliceRule, tensor::ExtractSliceOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    Location loc = op->getLoc();
    Value zeros = zerosOf(b, loc, state, slice.getSource());
    dxs[0] = tensor::InsertSliceOp::create(
        b, loc, dys[0], zeros, slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
    return success(); // offsets, sizes and strides are indices
  }
};

/// dest with src written into a region: src's cotangent is that region of
/// the cotangent, dest's the cotangent with the region zeroed (overwritten).
struct InsertSliceRule : Rule<InsertSliceRule, tensor::InsertSliceOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    Location loc = op->getLoc();
    auto offsets = insert.getMixedOffsets();
    auto sizes = insert.getMixedSizes();
    auto strides = insert.getMixedStrides();
    dxs[0] = tensor::ExtractSliceOp::create(b, loc, insert.getSourceType(),
                                            dys[0], offsets, sizes, strides);
    Value zeros = zerosOf(b, loc, state, insert.getSource());
    dxs[1] = tensor::InsertSliceOp::create(b, loc, zeros, dys[0], offsets,
                                           sizes, strides);
    return success();
  }
};

/// Each input's cotangent is its part of the result's, along `dim`.
struct ConcatRule : Rule<ConcatRule, tensor::ConcatOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto concat = cast<tensor::ConcatOp>(op);
    Location loc = op->getLoc();
    int64_t dim = concat.getDim();
    int64_t rank = concat.getResultType().getRank();
    int64_t offset = 0;
    for (auto [index, input] : llvm::enumerate(concat.getInputs())) {
      auto type = cast<RankedTensorType>(input.getType());
      if (type.isDynamicDim(dim))
        return op->emitOpError("backward of a concatenation needs static "
                               "sizes along the concatenated dim");
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
      offsets[dim] = b.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes = sizesOf(b, loc, state, input);
      SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
      dxs[index] = tensor::ExtractSliceOp::create(b, loc, type, dys[0],
                                                  offsets, sizes, strides);
      offset += type.getDimSize(dim);
    }
    return success();
  }
};

/// A sum over `dimensions` into its init: the cotangent broadcast back over
/// them to the input, and passed whole to the init.
struct ReduceRule : Rule<ReduceRule, linalg::ReduceOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto reduce = cast<linalg::ReduceOp>(op);
    Block &body = reduce.getCombiner().front();
    auto add = dyn_cast<arith::AddFOp>(&body.front());
    bool isSum = reduce.getNumDpsInputs() == 1 && add &&
                 body.getOperations().size() == 2 &&
                 llvm::is_contained(
                     ArrayRef<Value>{add.getLhs(), add.getRhs()},
                     body.getArgument(0)) &&
                 llvm::is_contained(
                     ArrayRef<Value>{add.getLhs(), add.getRhs()},
                     body.getArgument(1));
    if (!isSum)
      return op->emitOpError("backward is generated for sums (a single "
                             "arith.addf of the element and the "
                             "accumulator) only");
    Location loc = op->getLoc();
    Value input = reduce.getInputs()[0];
    Value init = tensor::EmptyOp::create(
        b, loc, sizesOf(b, loc, state, input),
        cast<RankedTensorType>(input.getType()).getElementType());
    dxs[0] = linalg::BroadcastOp::create(b, loc, dys[0], init,
                                         reduce.getDimensions())
                 .getResult()[0];
    dxs[1] = dys[0];
    return success();
  }
};

/// A broadcast along `dimensions`: the cotangent summed over them.
struct BroadcastRule : Rule<BroadcastRule, linalg::BroadcastOp> {
  LogicalResult buildVectorJacobianProduct(Operation *op, OpBuilder &b,
                                           ReverseState &state,
                                           ArrayRef<Value> dys,
                                           MutableArrayRef<Value> dxs) const {
    auto broadcast = cast<linalg::BroadcastOp>(op);
    Location loc = op->getLoc();
    Value input = broadcast.getInput();
    Value zeros = zerosOf(b, loc, state, input);
    dxs[0] = linalg::ReduceOp::create(
                 b, loc, ValueRange{dys[0]}, ValueRange{zeros},
                 broadcast.getDimensions(),
                 [](OpBuilder &nb, Location nloc, ValueRange args) {
                   Value sum =
                       arith::AddFOp::create(nb, nloc, args[0], args[1]);
                   linalg::YieldOp::create(nb, nloc, sum);
                 })
                 .getResult(0);
    return success(); // the init is overwritten: no cotangent
  }
};

/// A fill overwrites its init; nothing flows back.
struct FillRule : Rule<FillRule, linalg::FillOp> {
  LogicalResult buildVectorJacobianProduct(Operation *, OpBuilder &,
                                           ReverseState &, ArrayRef<Value>,
                                           MutableArrayRef<Value>) const {
    return success();
  }
};
} // namespace

void mlir::lamina::autodiff::registerUpstreamRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<AddFRule>(*context);
    arith::SubFOp::attachInterface<SubFRule>(*context);
    arith::NegFOp::attachInterface<NegFRule>(*context);
    arith::MulFOp::attachInterface<MulFRule>(*context);
    arith::DivFOp::attachInterface<DivFRule>(*context);
    arith::ExtFOp::attachInterface<ExtFRule>(*context);
    arith::TruncFOp::attachInterface<TruncFRule>(*context);
  });
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::CollapseShapeOp::attachInterface<CollapseShapeRule>(*context);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeRule>(*context);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceRule>(*context);
    tensor::InsertSliceOp::attachInterface<InsertSliceRule>(*context);
    tensor::ConcatOp::attachInterface<ConcatRule>(*context);
  });
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::TransposeOp::attachInterface<TransposeRule>(*context);
    linalg::MatmulOp::attachInterface<
        MatmulLikeRule<linalg::MatmulOp, false>>(*context);
    linalg::BatchMatmulOp::attachInterface<
        MatmulLikeRule<linalg::BatchMatmulOp, true>>(*context);
    linalg::FillOp::attachInterface<FillRule>(*context);
    linalg::BroadcastOp::attachInterface<BroadcastRule>(*context);
    linalg::ReduceOp::attachInterface<ReduceRule>(*context);
  });
}
