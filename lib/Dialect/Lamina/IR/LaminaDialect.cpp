//===- LaminaDialect.cpp - The lamina dialect and its attributes ----------===//

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lamina/IR/LaminaLayoutInterface.h"
#include "lamina/Support/AsmUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::lamina;

#include "lamina/Lamina/IR/LaminaOpsDialect.cpp.inc"

#include "lamina/Lamina/IR/LaminaEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "lamina/Lamina/IR/LaminaAttrs.cpp.inc"

void LaminaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lamina/Lamina/IR/LaminaOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "lamina/Lamina/IR/LaminaAttrs.cpp.inc"
      >();
  // The layout rules live in lib/Dialect/Lamina/Layouts: a context that
  // checks layouts without them attached fails loudly instead of treating
  // these ops as element-wise.
  declarePromisedInterfaces<
      LayoutOpInterface, LinearOp, LinearWithSeparateBiasOp, LinearWithSyncOp,
      LinearWithActOp, LinearWithDropoutOp, FusedLinearOp, MatmulOp, BiasAddOp,
      ActivationOp, DropoutOp, SyncOp, FusedQKVOp, LayerNormOp, SoftmaxOp,
      EmbeddingOp, EmbeddingGradOp, CrossEntropyOp, MaskedFillOp>();
}

//===----------------------------------------------------------------------===//
// SyncAttr
//===----------------------------------------------------------------------===//

Attribute SyncAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef modeName, collectiveName;
  if (parser.parseLess() || parser.parseKeyword(&modeName))
    return {};
  std::optional<SyncMode> mode = symbolizeSyncMode(modeName);
  if (!mode) {
    parser.emitError(loc, "unknown sync mode '")
        << modeName << "', expected fwd_pre, fwd_post or bwd_post";
    return {};
  }
  SMLoc collectiveLoc;
  if (parser.parseComma())
    return {};
  collectiveLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&collectiveName))
    return {};
  std::optional<CollectiveKind> collective =
      symbolizeCollectiveKind(collectiveName);
  if (!collective) {
    parser.emitError(collectiveLoc, "unknown sync op '")
        << collectiveName
        << "', expected all_reduce, all_gather, reduce_scatter or scatter";
    return {};
  }
  std::optional<int64_t> axis;
  std::optional<bool> outputGrad;
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "axis") {
      int64_t value;
      if (parser.parseInteger(value))
        return {};
      axis = value;
    } else if (key == "tensor_parallel_output_grad") {
      StringRef flag;
      SMLoc flagLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&flag))
        return {};
      if (flag != "true" && flag != "false") {
        parser.emitError(flagLoc, "expected true or false");
        return {};
      }
      outputGrad = flag == "true";
    } else {
      parser.emitError(keyLoc, "unknown sync parameter '")
          << key << "', expected axis or tensor_parallel_output_grad";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<SyncAttr>(loc, parser.getContext(), *mode,
                                     *collective, axis, outputGrad);
}

void SyncAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifySyncMode(getMode()) << ", "
          << stringifyCollectiveKind(getCollective());
  if (getAxis())
    printer << ", axis = " << *getAxis();
  if (std::optional<bool> outputGrad = getTensorParallelOutputGrad())
    printer << ", tensor_parallel_output_grad = "
            << (*outputGrad ? "true" : "false");
  printer << ">";
}

LogicalResult SyncAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               SyncMode mode, CollectiveKind collective,
                               std::optional<int64_t> axis,
                               std::optional<bool> outputGrad) {
  bool legal = mode == SyncMode::fwd_post ||
               (mode == SyncMode::fwd_pre &&
                collective == CollectiveKind::all_gather) ||
               (mode == SyncMode::bwd_post &&
                collective == CollectiveKind::all_reduce);
  if (!legal)
    return emitError() << "sync mode " << stringifySyncMode(mode)
                       << " does not exist with "
                       << stringifyCollectiveKind(collective)
                       << " (fwd_pre takes all_gather, bwd_post takes "
                          "all_reduce, fwd_post takes any collective)";
  bool needsAxis = collective != CollectiveKind::all_reduce;
  if (needsAxis && !axis)
    return emitError() << stringifyCollectiveKind(collective)
                       << " needs an axis";
  if (!needsAxis && axis)
    return emitError() << "all_reduce takes no axis";
  if (axis && *axis < 0)
    return emitError() << "sync axis must be non-negative, got " << *axis;
  if (outputGrad && collective != CollectiveKind::all_gather)
    return emitError() << "tensor_parallel_output_grad chooses the backward "
                          "of an all_gather; "
                       << stringifyCollectiveKind(collective)
                       << "'s backward has no choice";
  return success();
}

//===----------------------------------------------------------------------===//
// DropoutAttr
//===----------------------------------------------------------------------===//

Attribute DropoutAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  double p;
  if (parser.parseLess() || parser.parseKeyword("p") || parser.parseEqual() ||
      parser.parseFloat(p))
    return {};
  bool training = false, forkRng = false;
  uint64_t offset = 0;
  std::optional<int64_t> shardAxis;
  int64_t shards = 1;
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key))
      return {};
    if (key == "training") {
      training = true;
    } else if (key == "fork_rng") {
      forkRng = true;
    } else if (key == "offset") {
      if (parser.parseEqual() || parser.parseInteger(offset))
        return {};
    } else if (key == "shard_axis") {
      int64_t axis;
      if (parser.parseEqual() || parser.parseInteger(axis))
        return {};
      shardAxis = axis;
    } else if (key == "shards") {
      if (parser.parseEqual() || parser.parseInteger(shards))
        return {};
    } else {
      parser.emitError(keyLoc, "unknown dropout parameter '")
          << key
          << "', expected training, offset, fork_rng, shard_axis or shards";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<DropoutAttr>(loc, parser.getContext(),
                                        llvm::APFloat(p), training, offset,
                                        forkRng, shardAxis, shards);
}

void DropoutAttr::print(AsmPrinter &printer) const {
  printer << "<p = ";
  printShortestFloat(printer, getP());
  if (getTraining())
    printer << ", training";
  if (getOffset() != 0)
    printer << ", offset = " << getOffset();
  if (getForkRng())
    printer << ", fork_rng";
  if (getShardAxis())
    printer << ", shard_axis = " << *getShardAxis();
  if (getShards() != 1)
    printer << ", shards = " << getShards();
  printer << ">";
}

LogicalResult DropoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  llvm::APFloat p, bool, uint64_t,
                                  bool forkRng, std::optional<int64_t> shardAxis,
                                  int64_t shards) {
  double value = p.convertToDouble();
  if (!(value >= 0.0 && value <= 1.0))
    return emitError() << "dropout probability must be in [0, 1], got "
                       << formatShortestFloat(p);
  if (shards < 1)
    return emitError() << "dropout shards must be positive, got " << shards;
  if (shardAxis.has_value() != (shards > 1))
    return emitError() << "dropout shard_axis and shards > 1 go together";
  if (shardAxis && *shardAxis < 0)
    return emitError() << "dropout shard_axis must be non-negative";
  if (shardAxis && forkRng)
    return emitError() << "a fork_rng dropout draws by local index; it "
                          "takes no shard_axis";
  return success();
}

bool DropoutAttr::isActive() const {
  return getTraining() && getProbability() > 0.0;
}

DropoutAttr DropoutAttr::withOffset(uint64_t offset) const {
  return DropoutAttr::get(getContext(), getP(), getTraining(), offset,
                          getForkRng(), getShardAxis(), getShards());
}

//===----------------------------------------------------------------------===//
// LayoutAttr
//===----------------------------------------------------------------------===//

/// One axis's layout, `R`, `S(a)`, `S(a, groups = g)` or `P`.
static LayoutAttr parseAxisLayout(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return {};
  std::optional<LayoutKind> kind = symbolizeLayoutKind(name);
  if (!kind) {
    parser.emitError(loc, "unknown layout '")
        << name << "', expected R, S(axis) or P";
    return {};
  }
  std::optional<int64_t> axis;
  int64_t groups = 1;
  if (succeeded(parser.parseOptionalLParen())) {
    int64_t value;
    if (parser.parseInteger(value))
      return {};
    axis = value;
    if (succeeded(parser.parseOptionalComma()) &&
        (parser.parseKeyword("groups") || parser.parseEqual() ||
         parser.parseInteger(groups)))
      return {};
    if (parser.parseRParen())
      return {};
  }
  return parser.getChecked<LayoutAttr>(loc, parser.getContext(), *kind, axis,
                                       groups);
}

/// `axis: layout, ...]` (after the opening bracket), returned in the
/// canonical spelling.
static Attribute parseGridLayout(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<std::pair<StringAttr, LayoutAttr>> perAxis;
  auto parseEntry = [&]() -> ParseResult {
    SMLoc axisLoc = parser.getCurrentLocation();
    StringRef axis;
    if (parser.parseKeyword(&axis) || parser.parseColon())
      return failure();
    if (llvm::any_of(perAxis, [&](auto &entry) { return entry.first == axis; }))
      return parser.emitError(axisLoc, "grid axis '")
             << axis << "' is named twice";
    LayoutAttr layout = parseAxisLayout(parser);
    if (!layout)
      return failure();
    perAxis.emplace_back(StringAttr::get(parser.getContext(), axis), layout);
    return success();
  };
  if (succeeded(parser.parseOptionalRSquare())) {
    parser.emitError(loc, "a grid layout names at least one axis");
    return {};
  }
  if (parser.parseCommaSeparatedList(parseEntry) || parser.parseRSquare())
    return {};
  // The canonical form's invariants (GridLayoutAttr::verify), reported where
  // the list is written.
  for (auto [i, first] : llvm::enumerate(perAxis))
    for (auto &second : llvm::drop_begin(perAxis, i + 1))
      if (first.second.getAxis() && first.second.getAxis() ==
                                        second.second.getAxis()) {
        parser.emitError(loc, "tensor dim ")
            << *first.second.getAxis() << " is sharded on grid axes '"
            << first.first.getValue() << "' and '" << second.first.getValue()
            << "'; a dim is sharded on one axis at most";
        return {};
      }
  return composeLayouts(parser.getContext(), perAxis);
}

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  Attribute layout;
  if (succeeded(parser.parseOptionalLSquare()))
    layout = parseGridLayout(parser);
  else
    layout = parseAxisLayout(parser);
  if (!layout || parser.parseGreater())
    return {};
  return layout;
}

/// One axis's layout as parseAxisLayout reads it.
static void printAxisLayout(AsmPrinter &printer, LayoutAttr layout) {
  printer << stringifyLayoutKind(layout.getKind());
  if (layout.getAxis()) {
    printer << "(" << *layout.getAxis();
    if (layout.getGroups() != 1)
      printer << ", groups = " << layout.getGroups();
    printer << ")";
  }
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printAxisLayout(printer, *this);
  printer << ">";
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 LayoutKind kind, std::optional<int64_t> axis,
                                 int64_t groups) {
  if (kind == LayoutKind::sharded && !axis)
    return emitError() << "sharded layout needs an axis: S(axis)";
  if (kind != LayoutKind::sharded && axis)
    return emitError() << "only the sharded layout S takes an axis";
  if (axis && *axis < 0)
    return emitError() << "layout axis must be non-negative, got " << *axis;
  if (groups < 1)
    return emitError() << "a sharded axis has at least one group, got "
                       << groups;
  return success();
}

//===----------------------------------------------------------------------===//
// GridLayoutAttr
//===----------------------------------------------------------------------===//

Attribute GridLayoutAttr::parse(AsmParser &parser, Type type) {
  return LayoutAttr::parse(parser, type);
}

void GridLayoutAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(llvm::zip_equal(getAxes(), getLayouts()), printer,
                        [&](auto entry) {
                          auto [axis, layout] = entry;
                          printer << axis.getValue() << ": ";
                          printAxisLayout(printer, layout);
                        });
  printer << "]>";
}

LogicalResult
GridLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       ArrayRef<StringAttr> axes,
                       ArrayRef<LayoutAttr> layouts) {
  if (axes.size() != layouts.size())
    return emitError() << "a grid layout has one layout per axis";
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (!axis || axis.getValue().empty() || !layouts[i])
      return emitError() << "a grid layout's axes are named";
    if (i > 0 && axes[i - 1].getValue() >= axis.getValue())
      return emitError() << "a grid layout's axes are sorted and distinct";
    if (layouts[i].getKind() == LayoutKind::replicated)
      return emitError() << "a grid layout leaves replicated axes out";
    for (LayoutAttr other : layouts.drop_front(i + 1))
      if (layouts[i].getAxis() && layouts[i].getAxis() == other.getAxis())
        return emitError() << "tensor dim " << *other.getAxis()
                           << " is sharded on two grid axes";
  }
  if (llvm::all_of(axes, [](StringAttr axis) {
        return axis.getValue() == LaminaDialect::kTensorAxisName;
      }))
    return emitError() << "a layout on the tensor axis alone is a "
                          "#lamina.layout<R | S(a) | P>";
  return success();
}

std::optional<int64_t> mlir::lamina::getGridAxisSize(Operation *op,
                                                     StringRef axis) {
  for (const GridAxis &gridAxis : getGridAxes(op))
    if (gridAxis.name == axis)
      return gridAxis.size;
  return std::nullopt;
}

LayoutAttr GridLayoutAttr::getLayoutOn(StringRef axis) const {
  for (auto [name, layout] : llvm::zip_equal(getAxes(), getLayouts()))
    if (name.getValue() == axis)
      return layout;
  return LayoutAttr::get(getContext(), LayoutKind::replicated, std::nullopt);
}

LayoutAttr mlir::lamina::getLayoutOnAxis(Attribute layout, StringRef axis) {
  if (auto grid = dyn_cast_if_present<GridLayoutAttr>(layout))
    return grid.getLayoutOn(axis);
  auto oneAxis = dyn_cast_if_present<LayoutAttr>(layout);
  if (!oneAxis || axis == LaminaDialect::kTensorAxisName)
    return oneAxis;
  return LayoutAttr::get(layout.getContext(), LayoutKind::replicated,
                         std::nullopt);
}

Attribute mlir::lamina::composeLayouts(
    MLIRContext *context,
    ArrayRef<std::pair<StringAttr, LayoutAttr>> perAxis) {
  SmallVector<std::pair<StringAttr, LayoutAttr>> kept;
  for (auto &entry : perAxis)
    if (entry.second.getKind() != LayoutKind::replicated)
      kept.push_back(entry);
  llvm::sort(kept, [](auto &a, auto &b) {
    return a.first.getValue() < b.first.getValue();
  });
  if (kept.empty())
    return LayoutAttr::get(context, LayoutKind::replicated, std::nullopt);
  if (kept.size() == 1 &&
      kept.front().first.getValue() == LaminaDialect::kTensorAxisName)
    return kept.front().second;
  return GridLayoutAttr::get(
      context, llvm::to_vector(llvm::make_first_range(kept)),
      llvm::to_vector(llvm::make_second_range(kept)));
}

SmallVector<std::pair<StringAttr, LayoutAttr>>
mlir::lamina::getLayoutsPerAxis(Attribute layout) {
  SmallVector<std::pair<StringAttr, LayoutAttr>> perAxis;
  if (auto grid = dyn_cast_if_present<GridLayoutAttr>(layout)) {
    for (auto [axis, onAxis] : llvm::zip_equal(grid.getAxes(),
                                               grid.getLayouts()))
      perAxis.emplace_back(axis, onAxis);
  } else if (auto oneAxis = dyn_cast_if_present<LayoutAttr>(layout)) {
    perAxis.emplace_back(StringAttr::get(layout.getContext(),
                                         LaminaDialect::kTensorAxisName),
                         oneAxis);
  }
  return perAxis;
}

Attribute mlir::lamina::replaceLayoutOnAxis(MLIRContext *context,
                                            Attribute layout, StringRef axis,
                                            LayoutAttr onAxis) {
  SmallVector<std::pair<StringAttr, LayoutAttr>> perAxis =
      getLayoutsPerAxis(layout);
  llvm::erase_if(perAxis,
                 [&](auto &entry) { return entry.first.getValue() == axis; });
  perAxis.emplace_back(StringAttr::get(context, axis), onAxis);
  return composeLayouts(context, perAxis);
}

//===----------------------------------------------------------------------===//
// TrainingPairAttr
//===----------------------------------------------------------------------===//

Attribute TrainingPairAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr forward, backward;
  int64_t saved;
  SmallVector<int64_t> gradients;
  if (parser.parseLess() || parser.parseKeyword("forward") ||
      parser.parseEqual() || parser.parseAttribute(forward) ||
      parser.parseComma() || parser.parseKeyword("backward") ||
      parser.parseEqual() || parser.parseAttribute(backward) ||
      parser.parseComma() || parser.parseKeyword("saved") ||
      parser.parseEqual() || parser.parseInteger(saved) ||
      parser.parseComma() || parser.parseKeyword("gradients") ||
      parser.parseEqual() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       return parser.parseInteger(
                                           gradients.emplace_back());
                                     }) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<TrainingPairAttr>(loc, parser.getContext(), forward,
                                             backward, saved, gradients);
}

void TrainingPairAttr::print(AsmPrinter &printer) const {
  printer << "<forward = " << getForward() << ", backward = " << getBackward()
          << ", saved = " << getSaved() << ", gradients = [";
  llvm::interleaveComma(getGradients(), printer);
  printer << "]>";
}

LogicalResult
TrainingPairAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         FlatSymbolRefAttr forward, FlatSymbolRefAttr backward,
                         int64_t saved, ArrayRef<int64_t> gradients) {
  if (!forward || !backward)
    return emitError() << "a training pair names its forward and backward "
                          "functions";
  if (saved < 0)
    return emitError() << "a forward saves a non-negative number of values, "
                          "got "
                       << saved;
  for (auto [i, argument] : llvm::enumerate(gradients))
    if (argument < 0 || (i > 0 && gradients[i - 1] >= argument))
      return emitError() << "a training pair's gradients are distinct "
                            "argument numbers in increasing order";
  return success();
}

TrainingPairAttr mlir::lamina::getTrainingPair(ModuleOp module,
                                               StringRef entry) {
  auto pairs =
      module->getAttrOfType<DictionaryAttr>(LaminaDialect::kTrainingAttrName);
  return pairs ? pairs.getAs<TrainingPairAttr>(entry) : TrainingPairAttr();
}

void mlir::lamina::setTrainingPair(ModuleOp module, StringRef entry,
                                   TrainingPairAttr pair) {
  NamedAttrList pairs;
  if (auto existing = module->getAttrOfType<DictionaryAttr>(
          LaminaDialect::kTrainingAttrName))
    pairs.append(existing.getValue());
  pairs.set(entry, pair);
  module->setAttr(LaminaDialect::kTrainingAttrName,
                  pairs.getDictionary(module.getContext()));
}

std::optional<int64_t> mlir::lamina::getPipelineStage(Operation *function) {
  if (auto rank = function->getAttrOfType<IntegerAttr>(
          LaminaDialect::kPipelineStageAttrName))
    return rank.getInt();
  return std::nullopt;
}

void mlir::lamina::setPipelineStage(Operation *function, int64_t rank) {
  function->setAttr(
      LaminaDialect::kPipelineStageAttrName,
      IntegerAttr::get(IntegerType::get(function->getContext(), 64), rank));
}

//===----------------------------------------------------------------------===//
// PackedWeightsAttr
//===----------------------------------------------------------------------===//

Attribute PackedWeightsAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<Type> types;
  SmallVector<int64_t> sources;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&]() { return parser.parseType(types.emplace_back()); }) ||
      parser.parseKeyword("from") ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&]() { return parser.parseInteger(sources.emplace_back()); }) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<PackedWeightsAttr>(loc, parser.getContext(), types,
                                              sources);
}

void PackedWeightsAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getTypes(), printer);
  printer << "] from [";
  llvm::interleaveComma(getSources(), printer);
  printer << "]>";
}

LogicalResult
PackedWeightsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          ArrayRef<Type> types, ArrayRef<int64_t> sources) {
  if (types.size() != sources.size())
    return emitError() << "packed weights name one source argument each, got "
                       << types.size() << " weights and " << sources.size()
                       << " sources";
  if (!llvm::all_of(types, llvm::IsaPred<RankedTensorType>))
    return emitError() << "packed weights are ranked tensors";
  if (llvm::any_of(sources, [](int64_t source) { return source < 0; }))
    return emitError() << "packed weights' sources are argument numbers";
  return success();
}

PackedWeightsAttr mlir::lamina::getPackedWeights(ModuleOp module,
                                                 StringRef function) {
  auto plan = module->getAttrOfType<DictionaryAttr>(
      LaminaDialect::kWeightPackingAttrName);
  return plan ? plan.getAs<PackedWeightsAttr>(function) : PackedWeightsAttr();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::lamina::getWorldSize(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp()) {
    if (auto size = parent->getAttrOfType<IntegerAttr>(
            LaminaDialect::kWorldSizeAttrName))
      return size.getInt();
    if (auto grid = parent->getAttrOfType<DictionaryAttr>(
            LaminaDialect::kGridAttrName)) {
      int64_t product = 1;
      for (NamedAttribute axis : grid)
        product *= cast<IntegerAttr>(axis.getValue()).getInt();
      return product;
    }
  }
  return std::nullopt;
}

SmallVector<GridAxis> mlir::lamina::getGridAxes(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp()) {
    if (auto grid = parent->getAttrOfType<DictionaryAttr>(
            LaminaDialect::kGridAttrName))
      return llvm::map_to_vector(grid, [](NamedAttribute axis) {
        return GridAxis{axis.getName(),
                        cast<IntegerAttr>(axis.getValue()).getInt()};
      });
    if (auto size = parent->getAttrOfType<IntegerAttr>(
            LaminaDialect::kWorldSizeAttrName))
      return {GridAxis{StringAttr::get(op->getContext(),
                                       LaminaDialect::kTensorAxisName),
                       size.getInt()}};
  }
  return {};
}

void mlir::lamina::recordModulePaths(Operation *root) {
  root->walk([](Operation *op) {
    auto name = dyn_cast<NameLoc>(op->getLoc());
    if (!name)
      return;
    op->setAttr(LaminaDialect::kModuleAttrName, name.getName());
    op->setLoc(name.getChildLoc());
  });
}

void mlir::lamina::dropModulePaths(Operation *root) {
  root->walk([](Operation *op) {
    op->removeDiscardableAttr(LaminaDialect::kModuleAttrName);
  });
}

bool mlir::lamina::isInModule(Operation *op, StringRef module) {
  for (StringRef name :
       {StringRef("path"), StringRef(LaminaDialect::kModuleAttrName)}) {
    auto path = op->getAttrOfType<StringAttr>(name);
    if (path && isWithinModule(path.getValue(), module))
      return true;
  }
  return false;
}

bool mlir::lamina::isWithinModule(StringRef path, StringRef module) {
  return path.consume_front(module) && (path.empty() || path.starts_with("."));
}

bool mlir::lamina::shardsValues(FunctionOpInterface function) {
  for (BlockArgument argument : function.getArguments())
    if (LayoutAttr layout = getDeclaredLayout(argument);
        layout && layout.getKind() == LayoutKind::sharded)
      return true;
  WalkResult found = function.walk([](Operation *op) {
    auto layer = dyn_cast<LinearLayerOpInterface>(op);
    return isa<SyncOp>(op) || (layer && layer.getLayerSync())
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return found.wasInterrupted();
}

bool mlir::lamina::isPartitioned(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (parent->hasAttr(LaminaDialect::kPartitionedAttrName))
      return true;
  return false;
}

LayoutAttr mlir::lamina::getDeclaredLayout(Value value, StringRef axis) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return {};
  auto function = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!function || arg.getOwner() != &function.getFunctionBody().front())
    return {};
  return getLayoutOnAxis(
      function.getArgAttr(arg.getArgNumber(), LaminaDialect::kLayoutAttrName),
      axis);
}

namespace {
/// Where a discardable lamina attribute may sit and what it may hold:
/// whether `value` fits on `op`, and, for the error "'<name>' <expected>",
/// what it is. An attribute with several rules must pass each in turn.
struct AttributeRule {
  StringRef name;
  bool (*fits)(Operation *op, Attribute value);
  StringRef expected;
};
} // namespace

/// An attribute of type AttrT anywhere.
template <typename AttrT>
static bool holds(Operation *, Attribute value) {
  return isa<AttrT>(value);
}

/// A unit attribute of an OpT.
template <typename OpT>
static bool unitOn(Operation *op, Attribute value) {
  return isa<UnitAttr>(value) && isa<OpT>(op);
}

/// A module attribute mapping function names to AttrT.
template <typename AttrT>
static bool functionsMappedTo(Operation *op, Attribute value) {
  auto dictionary = dyn_cast<DictionaryAttr>(value);
  return isa<ModuleOp>(op) && dictionary &&
         llvm::all_of(dictionary, [](NamedAttribute entry) {
           return isa<AttrT>(entry.getValue());
         });
}

static bool isIntegerAtLeast(Attribute value, int64_t least) {
  auto integer = dyn_cast<IntegerAttr>(value);
  return integer && integer.getInt() >= least;
}

static ArrayRef<AttributeRule> getAttributeRules() {
  using D = LaminaDialect;
  static const AttributeRule rules[] = {
      {D::kWorldSizeAttrName,
       [](Operation *op, Attribute) { return isa<ModuleOp>(op); },
       "belongs on a builtin.module"},
      {D::kWorldSizeAttrName,
       [](Operation *, Attribute value) { return isIntegerAtLeast(value, 1); },
       "must be a positive integer"},
      {D::kGridAttrName,
       [](Operation *op, Attribute value) {
         auto grid = dyn_cast<DictionaryAttr>(value);
         return isa<ModuleOp>(op) && grid && !grid.empty() &&
                llvm::all_of(grid, [](NamedAttribute axis) {
                  return isIntegerAtLeast(axis.getValue(), 1);
                });
       },
       "is a module attribute naming grid axes and their positive sizes"},
      {D::kWeightPackingAttrName, functionsMappedTo<PackedWeightsAttr>,
       "must be a module attribute mapping function names to "
       "#lamina.packed_weights"},
      {D::kTrainingAttrName, functionsMappedTo<TrainingPairAttr>,
       "is a module attribute mapping function names to "
       "#lamina.training_pair"},
      {D::kPartitionedAttrName,
       [](Operation *op, Attribute value) {
         return isa<UnitAttr>(value) && isa<ModuleOp>(op) &&
                (op->hasAttr(D::kWorldSizeAttrName) ||
                 op->hasAttr(D::kGridAttrName));
       },
       "is a unit attribute of a module with 'lamina.world_size' or "
       "'lamina.grid'"},
      {D::kModuleAttrName, holds<StringAttr>, "must be a module path string"},
      {D::kBlockAttrName,
       [](Operation *op, Attribute value) {
         return isa<StringAttr>(value) && isa<FunctionOpInterface>(op);
       },
       "is the path of a block list on a function"},
      {D::kCheckpointModulesAttrName,
       [](Operation *op, Attribute value) {
         auto paths = dyn_cast<ArrayAttr>(value);
         return isa<FunctionOpInterface>(op) && paths &&
                llvm::all_of(paths, llvm::IsaPred<StringAttr>);
       },
       "is an array of module paths on a function"},
      {D::kCheckpointAttrName,
       [](Operation *op, Attribute value) {
         return isa<UnitAttr>(value) && isa<LaminaDialect>(op->getDialect());
       },
       "is a unit attribute of lamina layers"},
      // A stage ends after a layer, a layer's last piece, or (in a
      // generated backward) the last op differentiating a forward stage.
      {D::kPipelineCutAttrName,
       [](Operation *op, Attribute value) {
         return isa<UnitAttr>(value) &&
                isa_and_nonnull<FunctionOpInterface>(op->getParentOp());
       },
       "is a unit attribute of an op in a function"},
      {D::kPipelineReversedAttrName, unitOn<FunctionOpInterface>,
       "is a unit attribute of a function"},
      {D::kPipelineStageAttrName,
       [](Operation *op, Attribute value) {
         return isIntegerAtLeast(value, 0) && isa<FunctionOpInterface>(op);
       },
       "is a non-negative stage index on a function"},
      {D::kAsWrittenAttrName, unitOn<SyncOp>,
       "is a unit attribute of lamina.sync"},
      {D::kFromSyncAttrName, holds<SyncAttr>, "must be a #lamina.sync"},
      {D::kResultLayoutsAttrName,
       [](Operation *op, Attribute value) {
         auto layouts = dyn_cast<ArrayAttr>(value);
         return layouts && layouts.size() == op->getNumResults() &&
                llvm::all_of(layouts,
                             llvm::IsaPred<LayoutAttr, GridLayoutAttr>);
       },
       "must hold one #lamina.layout per result"},
      {D::kBackwardAttrName, holds<StringAttr>, "must be a string"},
      // The gradient of a vocabulary-parallel embedding's weight: its
      // result is the weight's blocks, which nothing else in the backward
      // implies.
      {D::kLayoutAttrName,
       [](Operation *op, Attribute value) {
         return isa<LayoutAttr>(value) && isa<EmbeddingGradOp>(op);
       },
       "on an op is the layout of a lamina.embedding_grad's result"},
      {D::kStageAttrName, holds<LoweredStageAttr>,
       "must be a #lamina<stage ...>"},
      {D::kCodegenAttrName,
       [](Operation *, Attribute value) {
         return isa<CpuMatmulAttr, CpuLoopTilesAttr>(value);
       },
       "must be a #lamina.cpu_matmul or a #lamina.cpu_loop_tiles"},
      {D::kPrefetchRowsAttrName,
       [](Operation *op, Attribute value) {
         return isIntegerAtLeast(value, 1) && isa<LoopLikeOpInterface>(op);
       },
       "is a positive distance in bytes on a loop"},
  };
  return rules;
}

LogicalResult LaminaDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  bool known = false;
  for (const AttributeRule &rule : getAttributeRules()) {
    if (rule.name != name)
      continue;
    known = true;
    if (!rule.fits(op, value))
      return op->emitError() << "'" << name << "' " << rule.expected;
  }
  if (!known)
    return op->emitError() << "unknown lamina attribute '" << name << "'";
  // What a rule on one attribute cannot see: the grid's ranks against the
  // world size, a layout against the matmul it lays out.
  if (name == kGridAttrName) {
    int64_t ranks = 1;
    for (NamedAttribute axis : cast<DictionaryAttr>(value))
      ranks *= cast<IntegerAttr>(axis.getValue()).getInt();
    auto worldSize = op->getAttrOfType<IntegerAttr>(kWorldSizeAttrName);
    if (worldSize && ranks != worldSize.getInt())
      return op->emitError() << "'" << kGridAttrName << "' " << value
                             << " has " << ranks << " ranks, but '"
                             << kWorldSizeAttrName << "' is "
                             << worldSize.getInt();
  }
  if (auto layout = dyn_cast<CpuMatmulAttr>(value))
    return verifyCpuMatmul(op, layout);
  return success();
}

LogicalResult LaminaDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  if (attr.getName() == kAnnotationsAttrName) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << kAnnotationsAttrName
                             << "' must be a dictionary";
    return success();
  }
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown lamina argument attribute '"
                           << attr.getName().getValue() << "'";
  SmallVector<std::pair<StringAttr, LayoutAttr>> perAxis =
      getLayoutsPerAxis(attr.getValue());
  if (perAxis.empty())
    return op->emitError() << "'" << kLayoutAttrName
                           << "' must be a #lamina.layout";
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return success();
  SmallVector<GridAxis> grid = getGridAxes(op);
  bool declaresGrid = false;
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    declaresGrid |= parent->hasAttr(kGridAttrName);
  for (auto &entry : perAxis) {
    StringAttr gridAxis = entry.first;
    LayoutAttr layout = entry.second;
    const GridAxis *known = llvm::find_if(
        grid, [&](const GridAxis &axis) { return axis.name == gridAxis; });
    if (known == grid.end() && (declaresGrid || gridAxis != kTensorAxisName)) {
      InFlightDiagnostic diag = op->emitError()
                                << "argument " << argIndex
                                << " has a layout on grid axis '"
                                << gridAxis.getValue() << "', ";
      if (!declaresGrid)
        return diag << "but the module's grid has the one axis 'tp' "
                       "(declare more with '"
                    << kGridAttrName << "')";
      diag << "but the axes of the module's '" << kGridAttrName << "' are ";
      llvm::interleaveComma(grid, diag, [&](const GridAxis &axis) {
        diag << "'" << axis.name.getValue() << "'";
      });
      return diag;
    }
    if (!layout.getAxis())
      continue;
    // A tensor, or the buffer it becomes; an LLVM function's pointers keep
    // the attribute as a record.
    auto type = dyn_cast<ShapedType>(function.getArgumentTypes()[argIndex]);
    if (!type && op->getName().getDialectNamespace() == "llvm")
      return success();
    if (!type || !type.hasRank())
      return op->emitError() << "argument " << argIndex
                             << " has a sharded layout but is not a ranked "
                                "tensor";
    int64_t axis = *layout.getAxis();
    if (axis >= type.getRank())
      return op->emitError() << "argument " << argIndex
                             << " is sharded on axis " << axis
                             << " but has rank " << type.getRank();
    int64_t size = type.getDimSize(axis);
    if (known == grid.end() || isPartitioned(op) ||
        ShapedType::isDynamic(size) || size % known->size == 0)
      continue;
    if (!declaresGrid)
      return op->emitError()
             << "argument " << argIndex << " is sharded on axis " << axis
             << " of size " << size
             << ", which is not divisible by the world size " << known->size;
    return op->emitError() << "argument " << argIndex << " is sharded on axis "
                           << axis << " of size " << size
                           << ", which is not divisible by the size "
                           << known->size << " of grid axis '"
                           << gridAxis.getValue() << "'";
  }
  return success();
}

LogicalResult LaminaDialect::verifyRegionResultAttribute(Operation *op,
                                                         unsigned,
                                                         unsigned resultIndex,
                                                         NamedAttribute attr) {
  // Partitioning records the layout of each sharded result, so that the
  // host knows which block of the whole result a rank returns.
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown lamina result attribute '"
                           << attr.getName().getValue() << "'";
  auto layout = dyn_cast<LayoutAttr>(attr.getValue());
  if (!layout || layout.getKind() == LayoutKind::partial)
    return op->emitError() << "result " << resultIndex
                           << " layout must be R or S(axis); a program never "
                              "returns partial sums";
  return success();
}
