//===- LnsTables.cpp - LNS additions from precomputed tables --------------===//

#include "lamina/Lns/Transforms/Passes.h"

namespace mlir::lamina::lns {
#define GEN_PASS_DEF_LAMINALNSTABLES
#include "lamina/Lns/Transforms/Passes.h.inc"
} // namespace mlir::lamina::lns

using namespace mlir;
using namespace mlir::lamina;

namespace {
struct LaminaLnsTablesPass
    : lns::impl::LaminaLnsTablesBase<LaminaLnsTablesPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    auto table = lns::SbdbModeAttr::get(context, lns::SbdbMode::table);
    getOperation()->walk([&](Operation *op) {
      if (!isa<lns::AddOp, lns::SubOp, lns::SumOp, lns::MatmulOp,
               lns::LinearOp>(op))
        return;
      auto mode = dyn_cast_or_null<lns::SbdbModeAttr>(
          op->getInherentAttr("sbdb").value_or(Attribute()));
      if (mode && mode.getValue() != lns::SbdbMode::ideal)
        return;
      lns::NumType type = lns::getLnsElementType(op->getResult(0).getType());
      if (!type || !type.getFracBits() ||
          *type.getFracBits() > lns::kMaxTableFracBits)
        return;
      op->setInherentAttr(StringAttr::get(context, "sbdb"), table);
    });
  }
};
} // namespace
