//===- DescriptorsByPointer.cpp - Entries read their descriptors in place -===//

#include "lamina/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::lamina {
#define GEN_PASS_DEF_LAMINADESCRIPTORSBYPOINTER
#include "lamina/Codegen/Passes.h.inc"
} // namespace mlir::lamina

using namespace mlir;
using namespace mlir::lamina;

namespace {

/// Where the C interface takes one argument of the entry from: its own
/// argument `interfaceArgument`, as it is (`field` empty), or the field at
/// `field` (of type `fieldType`) of the descriptor that argument points to.
struct ArgumentSource {
  unsigned interfaceArgument;
  LLVM::LLVMStructType descriptor;
  SmallVector<int64_t> field;
  Type fieldType;
};

/// The one call of `interface` to `entry`, if every argument it passes is an
/// argument of the interface or a field of a descriptor loaded from one.
std::optional<std::pair<LLVM::CallOp, SmallVector<ArgumentSource>>>
matchInterfaceCall(LLVM::LLVMFuncOp interface, LLVM::LLVMFuncOp entry) {
  LLVM::CallOp call;
  WalkResult walk = interface.walk([&](LLVM::CallOp candidate) {
    if (candidate.getCallee() != entry.getName())
      return WalkResult::advance();
    if (call)
      return WalkResult::interrupt();
    call = candidate;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || !call)
    return std::nullopt;
  Block &body = interface.getBody().front();
  auto interfaceArgument = [&](Value value) -> std::optional<unsigned> {
    auto argument = dyn_cast<BlockArgument>(value);
    if (!argument || argument.getOwner() != &body)
      return std::nullopt;
    return argument.getArgNumber();
  };
  SmallVector<ArgumentSource> sources;
  for (Value operand : call.getArgOperands()) {
    if (std::optional<unsigned> index = interfaceArgument(operand)) {
      sources.push_back({*index, {}, {}, {}});
      continue;
    }
    auto extract = operand.getDefiningOp<LLVM::ExtractValueOp>();
    auto load = extract ? extract.getContainer().getDefiningOp<LLVM::LoadOp>()
                        : LLVM::LoadOp();
    auto descriptor =
        load ? dyn_cast<LLVM::LLVMStructType>(load.getType()) : nullptr;
    std::optional<unsigned> index =
        load ? interfaceArgument(load.getAddr()) : std::nullopt;
    if (!descriptor || !index)
      return std::nullopt;
    sources.push_back({*index, descriptor,
                       SmallVector<int64_t>(extract.getPosition()),
                       extract.getType()});
  }
  return std::make_pair(call, std::move(sources));
}

/// The value of `source` read right before `user`, from `arguments`, the
/// interface's arguments added to the entry.
Value readSource(OpBuilder &builder, Operation *user, ValueRange arguments,
                 const ArgumentSource &source) {
  Value argument = arguments[source.interfaceArgument];
  if (source.field.empty())
    return argument;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(user);
  Location loc = user->getLoc();
  SmallVector<LLVM::GEPArg> indices = {0};
  for (int64_t position : source.field)
    indices.push_back(static_cast<int32_t>(position));
  auto pointerType = LLVM::LLVMPointerType::get(builder.getContext());
  Value address = LLVM::GEPOp::create(builder, loc, pointerType,
                                      source.descriptor, argument, indices);
  // The host owns the descriptors and never changes them during a call:
  // LLVM may merge and move these loads freely.
  return LLVM::LoadOp::create(builder, loc, source.fieldType, address,
                              /*alignment=*/0, /*isVolatile=*/false,
                              /*isNonTemporal=*/false, /*isInvariant=*/true);
}

/// `entry` takes the arguments of `interface` instead of the fields `call`
/// loads from them; `call` passes them through.
void takeInterfaceArguments(LLVM::LLVMFuncOp interface, LLVM::LLVMFuncOp entry,
                            LLVM::CallOp call,
                            ArrayRef<ArgumentSource> sources) {
  Block &entryBlock = entry.getBody().front();
  unsigned oldCount = entryBlock.getNumArguments();
  LLVM::LLVMFunctionType interfaceType = interface.getFunctionType();
  for (Type type : interfaceType.getParams())
    entryBlock.addArgument(type, entry.getLoc());
  ValueRange arguments = entryBlock.getArguments().drop_front(oldCount);
  OpBuilder builder(entry.getContext());
  for (auto [index, source] : llvm::enumerate(sources)) {
    BlockArgument old = entryBlock.getArgument(index);
    for (OpOperand &use : llvm::make_early_inc_range(old.getUses()))
      use.set(readSource(builder, use.getOwner(), arguments, source));
  }
  entryBlock.eraseArguments(0, oldCount);
  entry.setFunctionType(LLVM::LLVMFunctionType::get(
      entry.getFunctionType().getReturnType(), interfaceType.getParams()));
  entry.removeArgAttrsAttr();

  builder.setInsertionPoint(call);
  auto passThrough = LLVM::CallOp::create(builder, call.getLoc(), entry,
                                          interface.getArguments());
  call.replaceAllUsesWith(passThrough.getResults());
  call.erase();
  // The interface's loads and extractions are dead now.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(interface.getBody().front())))
    if (isa<LLVM::ExtractValueOp, LLVM::LoadOp>(op) && op.use_empty())
      op.erase();
}

struct LaminaDescriptorsByPointerPass
    : mlir::lamina::impl::LaminaDescriptorsByPointerBase<
          LaminaDescriptorsByPointerPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto interface : module.getOps<LLVM::LLVMFuncOp>()) {
      if (interface.isExternal() ||
          !interface.getName().starts_with(kCInterfacePrefix))
        continue;
      auto entry = symbols.lookup<LLVM::LLVMFuncOp>(
          interface.getName().drop_front(kCInterfacePrefix.size()));
      // Only an entry that nothing else calls may change its arguments.
      if (!entry || entry.isExternal() ||
          entry.getLinkage() != LLVM::Linkage::Internal)
        continue;
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(entry, module);
      if (!uses || !llvm::hasSingleElement(*uses))
        continue;
      auto matched = matchInterfaceCall(interface, entry);
      if (!matched)
        continue;
      takeInterfaceArguments(interface, entry, matched->first,
                             matched->second);
    }
  }
};
} // namespace
