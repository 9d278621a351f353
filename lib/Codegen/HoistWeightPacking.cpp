//===- HoistWeightPacking.cpp - Pack weights once, at load time -----------===//

#include "lamina/Codegen/Passes.h"
#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINAHOISTWEIGHTPACKING
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

/// The element-wise cast of one tensor into a fresh one that `value` is
/// (an autocast weight's truncation to bf16), or null.
static linalg::GenericOp getCast(Value value) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      !generic.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return {};
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2 ||
      !isa<arith::TruncFOp, arith::ExtFOp>(body.front()) ||
      body.front().getOperand(0) != body.getArgument(0))
    return {};
  return generic;
}

/// The function argument packed by `pack`, directly or through a cast.
static BlockArgument getPackedArgument(linalg::PackOp pack) {
  Value source = pack.getSource();
  if (linalg::GenericOp cast = getCast(source))
    source = cast.getDpsInputs()[0];
  return dyn_cast<BlockArgument>(source);
}

/// Packs of a function argument (or of its cast) into a fresh tensor: the
/// weight packing that can run once, before any call.
static SmallVector<linalg::PackOp> findArgumentPacks(func::FuncOp function) {
  SmallVector<linalg::PackOp> packs;
  function.walk([&](linalg::PackOp pack) {
    BlockArgument source = getPackedArgument(pack);
    if (source && source.getOwner() == &function.getBody().front() &&
        pack.getDest().getDefiningOp<tensor::EmptyOp>() &&
        !pack.getPaddingValue() && pack.getDestType().hasStaticShape())
      packs.push_back(pack);
  });
  return packs;
}

/// Whether `function` is the packer of a function already in `plan`.
static bool isPacker(func::FuncOp function, ArrayRef<NamedAttribute> plan) {
  StringRef name = function.getSymName();
  return name.consume_back("_pack_weights") &&
         llvm::any_of(plan, [&](NamedAttribute entry) {
           return entry.getName() == name;
         });
}

namespace {
struct LaminaHoistWeightPackingPass
    : mlir::lamina::impl::LaminaHoistWeightPackingBase<
          LaminaHoistWeightPackingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SmallVector<NamedAttribute> plan;
    if (auto existing = module->getAttrOfType<DictionaryAttr>(
            LaminaDialect::kWeightPackingAttrName))
      plan.assign(existing.begin(), existing.end());

    for (auto function :
         llvm::to_vector(module.getOps<func::FuncOp>())) {
      // Functions called inside the module (pipeline stages) keep their
      // signatures, and with them their packing.
      if (function.isDeclaration() || !function.isPublic() ||
          isPacker(function, plan) ||
          !SymbolTable::symbolKnownUseEmpty(function, module))
        continue;
      SmallVector<linalg::PackOp> packs = findArgumentPacks(function);
      if (packs.empty())
        continue;

      // @f_pack_weights(args of @f) -> packed weights.
      OpBuilder builder(context);
      builder.setInsertionPointAfter(function);
      SmallVector<Type> packedTypes;
      for (linalg::PackOp pack : packs)
        packedTypes.push_back(pack.getDestType());
      auto packer = func::FuncOp::create(
          builder, function.getLoc(),
          (function.getSymName() + "_pack_weights").str(),
          builder.getFunctionType(function.getArgumentTypes(), packedTypes));
      // Callable like @f: same argument attributes, same C interface.
      packer.setAllArgAttrs(function.getAllArgAttrs());
      if (Attribute cInterface = function->getAttr("llvm.emit_c_interface"))
        packer->setAttr("llvm.emit_c_interface", cInterface);
      Block *body = packer.addEntryBlock();
      builder.setInsertionPointToStart(body);
      IRMapping mapping;
      mapping.map(function.getArguments(), body->getArguments());
      SmallVector<Value> packed;
      for (linalg::PackOp pack : packs) {
        if (linalg::GenericOp cast = getCast(pack.getSource())) {
          builder.clone(*cast.getDpsInits()[0].getDefiningOp(), mapping);
          builder.clone(*cast, mapping);
        }
        builder.clone(*pack.getDest().getDefiningOp(), mapping);
        packed.push_back(builder.clone(*pack, mapping)->getResult(0));
      }
      func::ReturnOp::create(builder, function.getLoc(), packed);

      // @f takes the packed weights as trailing arguments instead.
      Block &entry = function.getBody().front();
      SmallVector<DictionaryAttr> argAttrs;
      function.getAllArgAttrs(argAttrs);
      SmallVector<int64_t> sourceNumbers;
      for (linalg::PackOp pack : packs) {
        BlockArgument source = getPackedArgument(pack);
        linalg::GenericOp cast = getCast(pack.getSource());
        sourceNumbers.push_back(source.getArgNumber());
        argAttrs.push_back(argAttrs[source.getArgNumber()]);
        BlockArgument argument =
            entry.addArgument(pack.getDestType(), pack.getLoc());
        Operation *dest = pack.getDest().getDefiningOp();
        pack.getResult().replaceAllUsesWith(argument);
        pack.erase();
        if (dest->use_empty())
          dest->erase();
        if (cast && cast->use_empty()) {
          Operation *castDest = cast.getDpsInits()[0].getDefiningOp();
          cast.erase();
          if (castDest->use_empty())
            castDest->erase();
        }
      }
      function.setFunctionType(builder.getFunctionType(
          entry.getArgumentTypes(), function.getResultTypes()));
      function.setAllArgAttrs(argAttrs);

      plan.push_back(builder.getNamedAttr(
          function.getSymName(),
          PackedWeightsAttr::get(context, packedTypes, sourceNumbers)));
    }
    if (!plan.empty())
      module->setAttr(LaminaDialect::kWeightPackingAttrName,
                      DictionaryAttr::get(context, plan));
  }
};
} // namespace
