//===- OutlineLoopNests.cpp - One function per top-level loop nest --------===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAOUTLINELOOPNESTS
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {

/// Whether `op`, directly in a function's body, is a loop nest to outline.
bool isLoopNest(Operation &op) {
  return isa<LoopLikeOpInterface, omp::ParallelOp>(op) &&
         op.getNumRegions() == 1;
}

/// `nest` moved into an `scf.execute_region` yielding its results (the
/// form outlineSingleBlockRegion takes).
scf::ExecuteRegionOp wrapInRegion(RewriterBase &rewriter, Operation *nest) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(nest);
  auto region = scf::ExecuteRegionOp::create(rewriter, nest->getLoc(),
                                             nest->getResultTypes());
  rewriter.replaceAllUsesWith(nest->getResults(), region.getResults());
  Block &body = region.getRegion().emplaceBlock();
  rewriter.moveOpBefore(nest, &body, body.end());
  rewriter.setInsertionPointToEnd(&body);
  scf::YieldOp::create(rewriter, nest->getLoc(), nest->getResults());
  return region;
}

/// Clones into `region` the constants it uses from above: they stay
/// constants in the outlined function instead of becoming its arguments.
void cloneConstantsInto(RewriterBase &rewriter, Region &region) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(region, captured);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&region.front());
  for (Value value : captured) {
    Operation *constant = value.getDefiningOp();
    if (!constant || !matchPattern(value, m_Constant()))
      continue;
    Value copy = rewriter.clone(*constant)->getResult(0);
    replaceAllUsesInRegionWith(value, copy, region);
  }
}

/// Outlines the loop nests of `function`; fails (with a diagnostic) if one
/// cannot be.
LogicalResult outlineNests(func::FuncOp function, unsigned minNests) {
  if (function.isExternal() || !function.getBody().hasOneBlock())
    return success();
  SmallVector<Operation *> nests;
  for (Operation &op : function.getBody().front())
    if (isLoopNest(op))
      nests.push_back(&op);
  if (nests.size() < minNests)
    return success();
  IRRewriter rewriter(function.getContext());
  for (auto [index, nest] : llvm::enumerate(nests)) {
    scf::ExecuteRegionOp region = wrapInRegion(rewriter, nest);
    cloneConstantsInto(rewriter, region.getRegion());
    std::string name =
        (function.getSymName() + "_nest" + llvm::Twine(index)).str();
    func::CallOp call;
    FailureOr<func::FuncOp> outlined = outlineSingleBlockRegion(
        rewriter, nest->getLoc(), region.getRegion(), name, &call);
    if (failed(outlined))
      return region.emitOpError("could not be outlined into a function");
    outlined->setPrivate();
    // Inlined back, the nests would make one function again.
    (*outlined)->setAttr("passthrough",
                         rewriter.getStrArrayAttr({"noinline"}));
    // The call replaces the region that held it.
    rewriter.setInsertionPoint(region);
    Operation *moved = rewriter.clone(*call);
    rewriter.replaceOp(region, moved->getResults());
  }
  return success();
}

struct OutlineLoopNestsPass
    : lamina::impl::LaminaOutlineLoopNestsBase<OutlineLoopNestsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> functions(
        getOperation().getOps<func::FuncOp>());
    for (func::FuncOp function : functions)
      if (failed(outlineNests(function, minNests)))
        return signalPassFailure();
  }
};

} // namespace
