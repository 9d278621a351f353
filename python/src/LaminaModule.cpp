//===- LaminaModule.cpp - Python bindings over Lamina's C++ API -----------===//
//
// A thin pybind11 module: compile an IR module (IrModule.h) for the host CPU
// or a GPU, or its training pair, and call it on NumPy arrays or on device
// buffers. Everything else of the Python package is pure Python.
//
//===----------------------------------------------------------------------===//

#include "IrModule.h"
#include "ScheduleSession.h"

#include "lamina/Execution/CudaTarget.h"
#include "lamina/Execution/Program.h"
#include "lamina/Execution/TrainingPair.h"
#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/InitAll.h"
#include "lamina/Runtime/MpiRuntime.h"

#include "mlir/IR/MLIRContext.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>

namespace py = pybind11;
using namespace mlir;
using namespace mlir::lamina;

namespace {

/// The NumPy dtype of an element kind (bf16 travels as uint16 bits).
py::dtype dtypeOf(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return py::dtype::of<float>();
  case ElementKind::F64:
    return py::dtype::of<double>();
  case ElementKind::F16:
    return py::dtype("float16");
  case ElementKind::BF16:
    return py::dtype::of<uint16_t>();
  case ElementKind::I64:
    return py::dtype::of<int64_t>();
  case ElementKind::I32:
    return py::dtype::of<int32_t>();
  }
  throw std::runtime_error("unknown element kind");
}

/// `error` (and the `diagnostics` that came with it) as a Python
/// exception: lamina.AllocationError (a MemoryError) for a tensor that
/// cannot be allocated, RuntimeError when no GPU can run a program,
/// ValueError otherwise.
[[noreturn]] void raise(llvm::Error error, const std::string &diagnostics = "") {
  bool allocation = false, noGpu = false;
  std::string message;
  llvm::handleAllErrors(
      std::move(error),
      [&](const AllocationError &failed) {
        allocation = true;
        message = failed.message();
      },
      [&](const NoUsableGpuError &failed) {
        noGpu = true;
        message = failed.message();
      },
      [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  if (!diagnostics.empty())
    message += "\n" + diagnostics;
  if (noGpu)
    throw std::runtime_error(message);
  if (!allocation)
    throw py::value_error(message);
  py::object type = py::module_::import("lamina.errors").attr("AllocationError");
  PyErr_SetString(type.ptr(), message.c_str());
  throw py::error_already_set();
}

/// The target named `name` ("cpu" with the pass pipeline `pipeline`, or
/// "cuda").
std::unique_ptr<ProgramTarget> makeTarget(const std::string &name,
                                          const std::string &pipeline) {
  if (name == "cpu")
    return std::make_unique<CpuTarget>(pipeline);
  if (name == "cuda")
    return std::make_unique<CudaTarget>();
  throw py::value_error("targets are 'cpu' and 'cuda'; got '" + name + "'");
}

/// A compiled entry function and the context that owns its IR.
class PyProgram {
public:
  /// Compiles `entry` of a copy of `module` (which stays as it is).
  PyProgram(const python::IrModule &module, const std::string &entry,
            const std::string &pipeline, const std::string &target)
      : context(module.getContext()) {
    std::unique_ptr<ProgramTarget> compileTarget = makeTarget(target, pipeline);
    python::DiagnosticCollector diagnostics(context.get());
    OwningOpRef<ModuleOp> copy = module.clone();
    // Other Python threads (progress reports) run while it compiles.
    auto compiled = [&] {
      py::gil_scoped_release release;
      return Program::compile(std::move(copy), entry, *compileTarget);
    }();
    if (!compiled)
      raise(compiled.takeError(), diagnostics.take());
    ++python::getStatistics().compiles;
    std::shared_ptr<Program> owned = std::move(*compiled);
    program = owned.get();
    owner = std::move(owned);
  }
  PyProgram(const std::string &source, const std::string &entry,
            const std::string &pipeline, const std::string &target)
      : PyProgram(python::IrModule::parse(source), entry, pipeline, target) {}
  /// `program`, which `owner` keeps alive.
  PyProgram(std::shared_ptr<MLIRContext> context, std::shared_ptr<void> owner,
            Program &program)
      : context(std::move(context)), owner(std::move(owner)),
        program(&program) {}

  /// (dtype name, shape) of each argument, scalars with shape ().
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs() const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> specs;
    for (const ArgumentSpec &spec : program->getInputs())
      specs.push_back({getElementName(spec.kind).str(),
                       {spec.shape.begin(), spec.shape.end()}});
    return specs;
  }

  /// The MLIR type of each argument as written in the program (an LNS
  /// argument's names its base: `tensor<8x!lns.num<f = 10>>`).
  std::vector<std::string> inputTypes() const {
    std::vector<std::string> types;
    for (const ArgumentSpec &spec : program->getInputs())
      types.push_back(spec.typeText);
    return types;
  }

  /// (dtype name, whole shape, shard axis or None) of each result: a
  /// sharded result comes back as this rank's block.
  std::vector<std::tuple<std::string, std::vector<int64_t>,
                         std::optional<int64_t>>>
  results() const {
    std::vector<std::tuple<std::string, std::vector<int64_t>,
                           std::optional<int64_t>>>
        specs;
    for (const ArgumentSpec &spec : program->getResults())
      specs.emplace_back(getElementName(spec.kind).str(),
                         std::vector<int64_t>(spec.shape.begin(),
                                              spec.shape.end()),
                         spec.shardAxis);
    return specs;
  }

  /// Shard axis (or None) of each argument: the program takes the rank's
  /// block of the whole array it is given.
  std::vector<std::optional<int64_t>> inputShardAxes() const {
    std::vector<std::optional<int64_t>> axes;
    for (const ArgumentSpec &spec : program->getInputs())
      axes.push_back(spec.shardAxis);
    return axes;
  }

  /// The groups of each argument's sharded axis (1 when not grouped).
  std::vector<int64_t> inputShardGroups() const {
    std::vector<int64_t> groups;
    for (const ArgumentSpec &spec : program->getInputs())
      groups.push_back(spec.shardGroups);
    return groups;
  }

  int64_t worldSize() const { return program->getWorldSize(); }

  /// Checks and packs the arguments once; returns an opaque handle.
  /// Calls the entry on buffers already in the target's memory (PyTorch
  /// CUDA tensors): `args` in order, each a (pointer, dtype name, shape)
  /// tensor or an int (an i64 scalar), then one (pointer, dtype, shape) per
  /// result, filled; ordered on `stream` (a cudaStream_t, 0: the default).
  void runResident(const std::vector<py::object> &args,
                   const std::vector<py::tuple> &outputs, uintptr_t stream) {
    llvm::ArrayRef<ArgumentSpec> inputs = program->getInputs();
    if (args.size() != inputs.size())
      throw py::value_error("the program takes " +
                            std::to_string(inputs.size()) + " arguments, got " +
                            std::to_string(args.size()));
    // The values' shapes and scalars, which the call values point into.
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> scalars;
    shapes.reserve(args.size() + outputs.size());
    scalars.reserve(args.size());
    SmallVector<CallValue> argValues, outputValues;
    auto tensor = [&](const py::handle &given, const ArgumentSpec &spec,
                      const std::string &role) {
      auto [pointer, dtype, shape] =
          given.cast<std::tuple<uintptr_t, std::string, std::vector<int64_t>>>();
      if (dtype != getElementName(spec.kind))
        throw py::value_error(role + " must be " + spec.typeText + ", got " +
                              dtype);
      std::vector<int64_t> &held = shapes.emplace_back(std::move(shape));
      int64_t elements = 1;
      for (int64_t size : held)
        elements *= size;
      return CallValue{reinterpret_cast<void *>(pointer), held,
                       size_t(elements) * getElementSize(spec.kind)};
    };
    for (auto [index, arg] : llvm::enumerate(args)) {
      const ArgumentSpec &spec = inputs[index];
      std::string role = "argument " + std::to_string(index);
      if (!spec.isScalar) {
        argValues.push_back(tensor(arg, spec, role));
        continue;
      }
      if (!py::isinstance<py::int_>(arg))
        throw py::value_error(role + " is a scalar " + spec.typeText);
      scalars.push_back(arg.cast<int64_t>());
      argValues.push_back({&scalars.back(), {}, sizeof(int64_t), true});
    }
    llvm::ArrayRef<ArgumentSpec> results = program->getResults();
    if (outputs.size() != results.size())
      throw py::value_error("the program has " +
                            std::to_string(results.size()) + " results, got " +
                            std::to_string(outputs.size()) + " outputs");
    for (auto [index, output] : llvm::enumerate(outputs))
      outputValues.push_back(
          tensor(output, results[index], "result " + std::to_string(index)));
    llvm::Error error = [&] {
      py::gil_scoped_release release;
      return program->runResident(argValues, outputValues,
                                  reinterpret_cast<void *>(stream));
    }();
    if (error)
      raise(std::move(error));
  }

  std::shared_ptr<Program::PreparedArguments>
  prepare(const std::vector<py::array> &arrays) {
    llvm::ArrayRef<ArgumentSpec> specs = program->getInputs();
    if (arrays.size() != specs.size())
      throw py::value_error("the program takes " +
                            std::to_string(specs.size()) + " arguments, got " +
                            std::to_string(arrays.size()));
    std::vector<HostTensor> tensors;
    for (auto [index, spec] : llvm::enumerate(specs))
      tensors.push_back(hostTensor(index, arrays[index]));
    auto prepared = program->prepare(std::move(tensors));
    if (!prepared)
      raise(prepared.takeError());
    return std::make_shared<Program::PreparedArguments>(
        std::move(*prepared));
  }

  /// Replaces some arguments of `prepared` in place (argument number →
  /// array); the weights are packed again only if the packing reads one.
  void update(const std::shared_ptr<Program::PreparedArguments> &prepared,
              const std::map<size_t, py::array> &arrays) {
    std::vector<std::pair<size_t, HostTensor>> tensors;
    for (const auto &[index, array] : arrays) {
      if (index >= program->getInputs().size())
        throw py::value_error("the program takes " +
                              std::to_string(program->getInputs().size()) +
                              " arguments, argument " + std::to_string(index) +
                              " given");
      tensors.emplace_back(index, hostTensor(index, array));
    }
    if (llvm::Error error = program->update(*prepared, std::move(tensors)))
      raise(std::move(error));
  }

  int64_t packCount() const { return program->getPackCount(); }
  std::string cacheStatus() const { return program->getCacheStatus().str(); }
  std::vector<std::string> warnings() const {
    return {program->getWarnings().begin(), program->getWarnings().end()};
  }

  std::vector<py::array>
  run(const std::shared_ptr<Program::PreparedArguments> &prepared) {
    llvm::Expected<std::vector<HostTensor>> outputs = [&] {
      py::gil_scoped_release release;
      return program->run(*prepared);
    }();
    if (!outputs)
      raise(outputs.takeError());
    std::vector<py::array> arrays;
    for (HostTensor &output : *outputs)
      arrays.push_back(asArray(output));
    return arrays;
  }

  /// This rank's stages of a pipelined entry alone: the results it computed
  /// or received, None for the others (Program::runStage).
  py::list
  runStage(const std::shared_ptr<Program::PreparedArguments> &prepared) {
    llvm::Expected<std::vector<std::optional<HostTensor>>> outputs = [&] {
      py::gil_scoped_release release;
      return program->runStage(*prepared);
    }();
    if (!outputs)
      raise(outputs.takeError());
    py::list arrays;
    for (std::optional<HostTensor> &output : *outputs)
      arrays.append(output ? py::object(asArray(*output)) : py::none());
    return arrays;
  }

  std::vector<int64_t> resultStages() const {
    return program->getResultStages();
  }

private:
  /// `output` as an array that takes over its bytes: no copy.
  static py::array asArray(HostTensor &output) {
    auto *owner = new std::shared_ptr<void>(output.bytes.getOwner());
    py::capsule base(owner, [](void *p) {
      delete static_cast<std::shared_ptr<void> *>(p);
    });
    return py::array(dtypeOf(output.kind),
                     std::vector<py::ssize_t>(output.shape.begin(),
                                              output.shape.end()),
                     output.bytes.data(), base);
  }

  /// Argument `index` as a host tensor of the element kind it must have.
  HostTensor hostTensor(size_t index, const py::array &given) const {
    const ArgumentSpec &spec = program->getInputs()[index];
    py::array array =
        py::array::ensure(given, py::array::c_style | py::array::forcecast);
    if (!array.dtype().is(dtypeOf(spec.kind)))
      throw py::value_error(
          "argument " + std::to_string(index) + " must have dtype " +
          py::str(dtypeOf(spec.kind)).cast<std::string>() + " (" +
          spec.typeText + "), got " +
          py::str(array.dtype()).cast<std::string>());
    // The program never writes its arguments: it reads the array in place,
    // which the prepared arguments keep alive.
    HostTensor tensor;
    tensor.kind = spec.kind;
    tensor.shape.assign(array.shape(), array.shape() + array.ndim());
    auto *held = new py::object(array);
    std::shared_ptr<void> owner(held, [](void *p) {
      py::gil_scoped_acquire gil;
      delete static_cast<py::object *>(p);
    });
    tensor.bytes = HostBuffer::borrow(
        static_cast<uint8_t *>(const_cast<void *>(array.data())),
        array.nbytes(), std::move(owner));
    return tensor;
  }

  /// Shared with the modules of the same parse; outlives the program.
  std::shared_ptr<MLIRContext> context;
  /// Keeps `program` alive: itself, or the training pair it belongs to.
  std::shared_ptr<void> owner;
  Program *program = nullptr;
};

/// A function's training pair, compiled (TrainingPair).
class PyTrainingPair {
public:
  /// `replicas`: None, or (first parameter argument, per parameter argument
  /// its owning replica or -1, mean, overlap). `on_step` is called with the
  /// name of each step as it starts.
  PyTrainingPair(const python::IrModule &module, const std::string &entry,
                 const std::string &pipeline, const std::string &target,
                 const std::vector<int64_t> &constants,
                 const std::optional<std::tuple<int64_t, std::vector<int64_t>,
                                                bool, bool>> &replicas,
                 const std::optional<py::function> &onStep,
                 bool outlineBlocks)
      : context(module.getContext()) {
    std::unique_ptr<ProgramTarget> compileTarget = makeTarget(target, pipeline);
    TrainingPairOptions options;
    options.constants.assign(constants.begin(), constants.end());
    options.outlineBlocks = outlineBlocks;
    if (replicas) {
      auto &[first, owners, mean, overlap] = *replicas;
      options.replicas = ReplicaReduction{
          first, SmallVector<int64_t>(owners.begin(), owners.end()), mean,
          overlap};
    }
    if (onStep)
      options.onStep = [&](llvm::StringRef step) {
        py::gil_scoped_acquire gil;
        // The compile goes on through LLVM code that cannot unwind.
        try {
          (*onStep)(step.str());
        } catch (py::error_already_set &failed) {
          failed.discard_as_unraisable("TrainingPair(on_step=...)");
        }
      };
    python::DiagnosticCollector diagnostics(context.get());
    auto compiled = [&] {
      py::gil_scoped_release release;
      return TrainingPair::compile(module.get(), entry, *compileTarget,
                                   options);
    }();
    if (!compiled) {
      std::string text = diagnostics.take();
      llvm::Error error = llvm::handleErrors(
          compiled.takeError(), [&](const TrainingPairError &failed) {
            throw py::value_error(failed.message() + ": " +
                                  llvm::StringRef(text).trim().str());
          });
      raise(std::move(error), text);
    }
    python::getStatistics().compiles += 2;
    pair = std::make_shared<TrainingPair>(std::move(*compiled));
  }

  PyProgram forward() { return PyProgram(context, pair, pair->getForward()); }
  PyProgram backward() {
    return PyProgram(context, pair, pair->getBackward());
  }
  python::IrModule module() const {
    return python::IrModule(context, pair->getModule().clone());
  }
  int64_t saved() const { return pair->getNumSaved(); }
  std::vector<int64_t> gradients() const {
    return {pair->getGradientArguments().begin(),
            pair->getGradientArguments().end()};
  }

private:
  std::shared_ptr<MLIRContext> context;
  std::shared_ptr<TrainingPair> pair;
};

} // namespace

/// The runtime's axis for a grid axis's name.
static MpiAxis gridAxis(const std::string &name) {
  if (std::optional<MpiAxis> axis = getMpiAxisNamed(name))
    return *axis;
  throw py::value_error("grid axes are 'dp', 'pp' and 'tp'; got '" + name +
                        "'");
}

PYBIND11_MODULE(_lamina, m) {
  m.doc() = "Lamina's compiler and runtime (C++), wrapped for the lamina "
            "package";
  registerAllPasses();

  py::class_<Program::PreparedArguments,
             std::shared_ptr<Program::PreparedArguments>>(
      m, "PreparedArguments",
      "Arguments checked and with weights packed, ready for repeated calls");

  py::class_<PyProgram>(m, "Program",
                        "An IR module compiled for the host CPU (a named "
                        "pipeline and the JIT) or a GPU ('cuda': an "
                        "artefact loaded into this process)")
      .def(py::init<const python::IrModule &, const std::string &,
                    const std::string &, const std::string &>(),
           py::arg("module"), py::arg("entry") = "main",
           py::arg("pipeline") = "lamina-cpu-pipeline",
           py::arg("target") = "cpu")
      .def(py::init<const std::string &, const std::string &,
                    const std::string &, const std::string &>(),
           py::arg("source"), py::arg("entry") = "main",
           py::arg("pipeline") = "lamina-cpu-pipeline",
           py::arg("target") = "cpu")
      .def_property_readonly("inputs", &PyProgram::inputs,
                             "(dtype, shape) of every argument")
      .def_property_readonly("input_types", &PyProgram::inputTypes,
                             "the MLIR type of every argument")
      .def_property_readonly("results", &PyProgram::results,
                             "(dtype, whole shape, shard axis or None) of "
                             "every result")
      .def_property_readonly("input_shard_axes", &PyProgram::inputShardAxes,
                             "shard axis (or None) of every argument")
      .def_property_readonly("input_shard_groups", &PyProgram::inputShardGroups,
                             "groups of the sharded axis of every argument "
                             "(S(axis, groups = g); 1 when not grouped)")
      .def_property_readonly("world_size", &PyProgram::worldSize,
                             "the MPI ranks the program runs on (1: no MPI)")
      .def("prepare", &PyProgram::prepare, py::arg("arrays"),
           "check the arguments and pack the weights once")
      .def("update", &PyProgram::update, py::arg("prepared"),
           py::arg("arrays"),
           "replace arguments of prepared arguments in place ({number: "
           "array}); the weights are packed again only if one of them is "
           "packed")
      .def_property_readonly("pack_count", &PyProgram::packCount,
                             "how many times the weights have been packed")
      .def_property_readonly("cache_status", &PyProgram::cacheStatus,
                             "'hit' (loaded from the compile cache), 'miss' "
                             "(compiled and stored) or 'off'")
      .def_property_readonly("warnings", &PyProgram::warnings,
                             "what the compile reported without failing "
                             "(a damaged compile cache entry)")
      .def("run_resident", &PyProgram::runResident, py::arg("args"),
           py::arg("outputs"), py::arg("stream") = 0,
           "call the function on buffers in the target's memory: "
           "(pointer, dtype, shape) tensors and int scalars, then one "
           "(pointer, dtype, shape) per result; ordered on `stream`")
      .def("run", &PyProgram::run, py::arg("prepared"),
           "call the function; returns its results as NumPy arrays")
      .def("run_stage", &PyProgram::runStage, py::arg("prepared"),
           "run this rank's stages of a pipelined function alone: the "
           "results it computed or received, None for the others; its sends "
           "complete later (complete_deferred_sends)")
      .def_property_readonly("result_stages", &PyProgram::resultStages,
                             "per result, the rank of the pipeline stage "
                             "computing it (-1: not pipelined)");

  py::class_<PyTrainingPair>(
      m, "TrainingPair",
      "lamina-generate-backward's forward / backward pair of a function, "
      "each compiled alone")
      .def(py::init<const python::IrModule &, const std::string &,
                    const std::string &, const std::string &,
                    const std::vector<int64_t> &,
                    const std::optional<std::tuple<
                        int64_t, std::vector<int64_t>, bool, bool>> &,
                    const std::optional<py::function> &, bool>(),
           py::arg("module"), py::arg("entry"),
           py::arg("pipeline") = "lamina-cpu-pipeline",
           py::arg("target") = "cpu",
           py::arg("constants") = std::vector<int64_t>(),
           py::arg("replicas") = py::none(), py::arg("on_step") = py::none(),
           py::arg("outline_blocks") = true)
      .def_property_readonly("forward", &PyTrainingPair::forward,
                             "the entry's results, then the saved values")
      .def_property_readonly("backward", &PyTrainingPair::backward,
                             "the gradients, from the arguments, the saved "
                             "values and one cotangent per result")
      .def_property_readonly("module", &PyTrainingPair::module,
                             "the differentiated module the programs were "
                             "compiled from")
      .def_property_readonly("saved", &PyTrainingPair::saved,
                             "how many saved values the forward returns")
      .def_property_readonly("gradients", &PyTrainingPair::gradients,
                             "the arguments the gradients are of, in order");

  python::populateIrModuleBindings(m);
  python::populateScheduleSessionBindings(m);
  m.def("rank", [] { return mpiWorldRank(); },
        "this process's MPI rank (MPICH; initialises MPI)");
  m.def("world_size", [] { return mpiWorldSize(); },
        "the number of processes in this MPI world (MPICH; initialises MPI)");
  m.def("use_grid", &mpiUseGrid, py::arg("dp"), py::arg("pp"), py::arg("tp"),
        "put the device grid of dp x pp x tp ranks in use for the programs "
        "run next (tp varies fastest); (0, 0, 0): no grid");
  m.def("replica_wait_seconds", &getMpiReplicaWaitSeconds,
        "seconds spent waiting for reductions over the data axis");
  m.def("complete_deferred_sends", &mpiCompleteDeferredSends,
        "wait for the sends of stage-by-stage pipeline runs");
  m.def(
      "axis_broadcast",
      [](py::array array, int64_t root, const std::string &axis) {
        if (!(array.flags() & py::array::c_style) || !array.writeable())
          throw py::value_error("axis_broadcast takes a writable "
                                "C-contiguous array");
        mpiAxisBroadcast(array.mutable_data(), array.nbytes(), root,
                         gridAxis(axis));
      },
      py::arg("array"), py::arg("root"), py::arg("axis"),
      "broadcast `array` in place from rank `root` of the grid axis `axis` "
      "('dp', 'pp' or 'tp')");
  m.def(
      "axis_reduce",
      [](py::array_t<double, py::array::c_style> array,
         const std::string &axis, const std::string &op) {
        if (op != "sum" && op != "max")
          throw py::value_error("axis_reduce takes 'sum' or 'max'");
        mpiAxisReduce(array.mutable_data(), array.size(), gridAxis(axis),
                      op == "max");
      },
      py::arg("array"), py::arg("axis"), py::arg("op") = "sum",
      "sum (or take the maximum of) a float64 array in place over the "
      "ranks of the grid axis `axis`");
}
