//===- UpstreamRules.cpp - Reverse-mode rules of upstream ops -------------===//
//
// The upstream ops the importer writes between layers: element-wise arith
// on tensors (residuals, scaling), reshapes, transposes, the attention
// batch matmuls, and fills (whose cotangent stops there).
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
    // lhs·rhs into zeros shaped like `like` (the operand it is the
    // cotangent of).
    auto product = [&](Value lhs, Value rhs, Value like) -> Value {
      return Op::create(b, loc, TypeRange{like.getType()},
                        ValueRange{lhs, rhs},
                        ValueRange{buildZerosLike(b, loc, like)})
          .getResult(0);
    };
    Value dc = dys[0];
    dxs[0] = product(dc, buildTranspose(b, loc, bm, swap), a);
    dxs[1] = product(buildTranspose(b, loc, a, swap), dc, bm);
    dxs[2] = dc;
    return success();
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
  });
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    tensor::CollapseShapeOp::attachInterface<CollapseShapeRule>(*context);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeRule>(*context);
  });
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    linalg::TransposeOp::attachInterface<TransposeRule>(*context);
    linalg::MatmulOp::attachInterface<
        MatmulLikeRule<linalg::MatmulOp, false>>(*context);
    linalg::BatchMatmulOp::attachInterface<
        MatmulLikeRule<linalg::BatchMatmulOp, true>>(*context);
    linalg::FillOp::attachInterface<FillRule>(*context);
  });
}
