//===- IrModule.cpp - An IR module kept parsed, for Python ----------------===//

#include "IrModule.h"

#include "lamina/InitAll.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Support/ParseModule.h"
#include "lamina/Support/TransformScript.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

#include <map>

namespace py = pybind11;
using namespace mlir;
using namespace mlir::lamina;
using namespace mlir::lamina::python;

Statistics &mlir::lamina::python::getStatistics() {
  static Statistics statistics;
  return statistics;
}

std::shared_ptr<MLIRContext> mlir::lamina::python::makeContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  auto context = std::make_shared<MLIRContext>(registry);
  context->printOpOnDiagnostic(false);
  return context;
}

IrModule IrModule::parse(const std::string &source) {
  std::shared_ptr<MLIRContext> context = makeContext();
  OwningOpRef<ModuleOp> module;
  {
    DiagnosticCollector diagnostics(context.get());
    module = parseVerifiedModule(source, context.get(), "program.mlir");
    if (!module)
      throw py::value_error("cannot parse the program:\n" +
                            diagnostics.take());
  }
  ++getStatistics().parses;
  recordModulePaths(*module);
  return IrModule(std::move(context), std::move(module));
}

IrModule IrModule::transform(const std::string &schedule,
                             const std::string &pipeline) const {
  OwningOpRef<ModuleOp> result = clone();
  DiagnosticCollector diagnostics(context.get());
  if (!schedule.empty() &&
      failed(applyTransformScript(*result, schedule, "__transform_main",
                                  "schedule.mlir")))
    throw py::value_error(diagnostics.take());
  if (!pipeline.empty()) {
    PassManager pm(context.get());
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    if (failed(parsePassPipeline(pipeline, pm, errorStream)))
      throw py::value_error("bad pipeline '" + pipeline + "': " + errors);
    LogicalResult ran = [&] {
      // Other Python threads (progress reports) run meanwhile.
      py::gil_scoped_release release;
      return pm.run(*result);
    }();
    if (failed(ran))
      throw py::value_error(diagnostics.take());
  }
  return IrModule(context, std::move(result));
}

std::string IrModule::text() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.get().print(os);
  return text;
}

namespace {
/// Function @`name` of `module`; ValueError when there is none.
func::FuncOp lookupFunction(const IrModule &module, const std::string &name) {
  auto function = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      module.get(), StringAttr::get(module.getContext().get(), name));
  if (!function)
    throw py::value_error("the program has no function @" + name);
  return function;
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// What lamina-generate-backward recorded for `entry` in the module's
/// `lamina.training`: its forward and backward functions, how many values
/// the forward saves, which arguments get gradients.
py::dict trainingEntry(const IrModule &module, const std::string &entry) {
  TrainingPairAttr pair = getTrainingPair(module.get(), entry);
  if (!pair)
    throw py::value_error("lamina-generate-backward recorded no "
                          "lamina.training entry for @" +
                          entry);
  py::dict result;
  result["forward"] = pair.getForward().getValue().str();
  result["backward"] = pair.getBackward().getValue().str();
  result["saved"] = pair.getSaved();
  result["gradients"] = std::vector<int64_t>(pair.getGradients());
  return result;
}

/// The LNS base of each argument of @`entry`: None, ("f", bits) or
/// ("b", base).
std::vector<py::object> argumentLnsBases(const IrModule &module,
                                         const std::string &entry) {
  std::vector<py::object> bases;
  for (Type type : lookupFunction(module, entry).getArgumentTypes()) {
    auto number = dyn_cast<lns::NumType>(getElementTypeOrSelf(type));
    if (!number)
      bases.push_back(py::none());
    else if (number.getFracBits())
      bases.push_back(py::make_tuple("f", *number.getFracBits()));
    else
      bases.push_back(py::make_tuple(
          "b", number.getExplicitBase().getValueAsDouble()));
  }
  return bases;
}

/// (shard axis or None, groups) of each argument of @`entry`, as declared
/// by the schedule; every argument is whole on one rank.
/// A copy of `module` declaring the grid of `sizes` (lamina.grid) instead
/// of a world size; ValueError where the module does not verify with it.
IrModule onGrid(const IrModule &module,
                const std::map<std::string, int64_t> &sizes) {
  OwningOpRef<ModuleOp> result = module.clone();
  MLIRContext *context = module.getContext().get();
  SmallVector<NamedAttribute> axes;
  for (const auto &[name, size] : sizes)
    axes.emplace_back(StringAttr::get(context, name),
                      IntegerAttr::get(IntegerType::get(context, 64), size));
  (*result)->removeAttr(LaminaDialect::kWorldSizeAttrName);
  (*result)->setAttr(LaminaDialect::kGridAttrName,
                     DictionaryAttr::get(context, axes));
  DiagnosticCollector diagnostics(context);
  if (failed(verify(*result)))
    throw py::value_error(diagnostics.take());
  return IrModule(module.getContext(), std::move(result));
}

std::vector<std::pair<std::optional<int64_t>, int64_t>>
argumentShards(const IrModule &module, const std::string &entry) {
  func::FuncOp function = lookupFunction(module, entry);
  std::optional<int64_t> worldSize =
      getGridAxisSize(module.get(), LaminaDialect::kTensorAxisName);
  std::vector<std::pair<std::optional<int64_t>, int64_t>> shards;
  for (BlockArgument argument : function.getArguments()) {
    LayoutAttr layout = worldSize && *worldSize > 1
                            ? getDeclaredLayout(argument)
                            : LayoutAttr();
    if (layout && layout.getKind() == LayoutKind::sharded)
      shards.emplace_back(layout.getAxis(), layout.getGroups());
    else
      shards.emplace_back(std::nullopt, 1);
  }
  return shards;
}

/// The narrower float type `value` holds exactly, if it is a lower-precision
/// op's rounded result (lamina-autocast's widening of it), moved but not
/// computed on since (reshaped, transposed, sliced); else null.
FloatType roundedElement(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (auto extend = dyn_cast<arith::ExtFOp>(op))
      return dyn_cast<FloatType>(getElementTypeOrSelf(extend.getIn()));
    if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
      value = transpose.getInput();
      continue;
    }
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ReshapeOp, tensor::ExtractSliceOp, tensor::CastOp>(op))
      return {};
    value = op->getOperand(0);
  }
  return {};
}

/// For each result of `entry`: the narrower float type it holds exactly
/// ("bf16", "f16"), or None.
std::vector<std::optional<std::string>>
roundedResults(const IrModule &module, const std::string &entry) {
  func::FuncOp function = lookupFunction(module, entry);
  std::vector<std::optional<std::string>> elements(
      function.getNumResults());
  if (!function.getBody().hasOneBlock())
    return elements;
  Operation *terminator = function.getBody().front().getTerminator();
  for (auto [index, value] : llvm::enumerate(terminator->getOperands()))
    if (FloatType element = roundedElement(value))
      elements[index] = typeText(element);
  return elements;
}

std::vector<std::string> resultTypes(const IrModule &module,
                                     const std::string &name) {
  std::vector<std::string> types;
  for (Type type : lookupFunction(module, name).getResultTypes())
    types.push_back(typeText(type));
  return types;
}
} // namespace

void mlir::lamina::python::populateIrModuleBindings(py::module_ &m) {
  py::class_<IrModule>(m, "Module",
                       "An IR module kept parsed; transforms give new "
                       "modules in the same context, programs compile it "
                       "without parsing again")
      .def(py::init(&IrModule::parse), py::arg("source"))
      .def("transform", &IrModule::transform, py::arg("schedule") = "",
           py::arg("pipeline") = "",
           "a copy after a transform script and a pass pipeline")
      .def("__str__", &IrModule::text)
      .def("on_grid", &onGrid, py::arg("sizes"),
           "a copy declaring the device grid of `sizes` ({axis: ranks}) in "
           "place of its world size")
      .def_property_readonly(
          "world_size",
          [](const IrModule &module) {
            return getGridAxisSize(module.get(),
                                   LaminaDialect::kTensorAxisName)
                .value_or(1);
          },
          "the ranks the program's tensors are split over: its tensor "
          "axis (lamina.world_size, or lamina.grid's tp)")
      .def("training_entry", &trainingEntry, py::arg("entry"),
           "{forward, backward, saved, gradients} of lamina.training")
      .def("argument_lns_bases", &argumentLnsBases, py::arg("entry"),
           "the LNS base of every argument: None, ('f', bits) or "
           "('b', base)")
      .def("argument_shards", &argumentShards, py::arg("entry"),
           "(shard axis or None, groups) of every argument")
      .def("result_types", &resultTypes, py::arg("function"),
           "the result types of a function, as MLIR writes them")
      .def("rounded_results", &roundedResults, py::arg("entry"),
           "for each result of `entry`, the narrower float type it holds "
           "exactly (a lower-precision op's rounded result, moved since: "
           "'bf16', 'f16') or None");
  m.def(
      "transform_ir",
      [](const std::string &source, const std::string &schedule,
         const std::string &pipeline) {
        return IrModule::parse(source).transform(schedule, pipeline).text();
      },
      py::arg("source"), py::arg("schedule") = "", py::arg("pipeline") = "",
      "IR text after a transform script and a pass pipeline, as text (for "
      "tests and tools; the package keeps Modules)");
  m.def(
      "statistics",
      [] {
        py::dict result;
        result["parses"] = getStatistics().parses;
        result["compiles"] = getStatistics().compiles;
        return result;
      },
      "how many times IR text was parsed and programs compiled");
}
