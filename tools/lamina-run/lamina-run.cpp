//===- lamina-run.cpp - Compile an IR file and execute a function ---------===//
//
// lamina-run model.mlir --entry=f --input=x.npy --input=i64:7 \
//     --reference=y.npy --repeat=20
// mpirun.mpich -np 2 lamina-run model.mlir --schedule=megatron.mlir ...
// lamina-run model.mlir --backward --random-inputs --output-dir=grads
//
//===----------------------------------------------------------------------===//

#include "lamina/Execution/CudaTarget.h"
#include "lamina/Execution/Program.h"
#include "lamina/Execution/RunInputs.h"
#include "lamina/Execution/TrainingPair.h"
#include "lamina/Support/ParseModule.h"
#include "lamina/Support/TransformScript.h"
#include "lamina/Runtime/MpiRuntime.h"
#include "lamina/InitAll.h"
#include "lamina/Lamina/IR/Lamina.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <numeric>
#include <random>

using namespace mlir;
using namespace mlir::lamina;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<file.mlir>"),
                                      cl::Required);
static cl::opt<std::string> entryName("entry", cl::desc("function to run"),
                                      cl::init("main"));
static cl::opt<std::string>
    pipelineText("pipeline",
                 cl::desc("pass pipeline compiling the module to LLVM"),
                 cl::init("lamina-cpu-pipeline"));
static cl::opt<std::string>
    scheduleFile("schedule",
                 cl::desc("transform-dialect schedule (@__transform_main) "
                          "applied before compilation"));
static cl::opt<int64_t> worldSizeOption(
    "world-size",
    cl::desc("declare the module for this many ranks (lamina.world_size) "
             "before the schedule; 0 keeps the module's"),
    cl::init(0));
static cl::list<std::string>
    inputArgs("input",
              cl::desc("an argument, in order: a .npy file or a scalar "
                       "'i64:7', 'f32:0.5'"));
static cl::opt<bool>
    randomInputs("random-inputs",
                 cl::desc("fill arguments not given by --input with seeded "
                          "random data (floats uniform in [-1, 1), integer "
                          "scalars = the seed)"));
static cl::opt<uint64_t> randomSeed("seed", cl::desc("seed of --random-inputs"),
                                    cl::init(0));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("write result<i>.npy here"));
static cl::list<std::string>
    referenceFiles("reference", cl::desc("expected result (.npy), in order"));
static cl::opt<double> relativeTolerance("rtol", cl::desc("relative tolerance"),
                            cl::init(1e-5));
static cl::opt<double> absoluteTolerance("atol", cl::desc("absolute tolerance"),
                            cl::init(1e-6));
static cl::opt<std::string>
    target("target",
           cl::desc("cpu (JIT, the default) or cuda (an ahead-of-time GPU "
                    "artefact: lamina-gpu-pipeline, loaded and run on the "
                    "GPU; inputs and results are copied to and from it)"),
           cl::init("cpu"));
static cl::opt<std::string> chip("chip", cl::desc(gpuChipOptionHelp()),
                                 cl::init(kDefaultGpuChip.str()));
static cl::opt<bool> backwardOption(
    "backward",
    cl::desc("run a training step of --entry instead: "
             "lamina-generate-backward's forward on the arguments, then its "
             "backward on them, the saved values and one cotangent per "
             "result (--cotangent, else seeded random data); the results are "
             "the gradients of the float arguments, in order"));
static cl::list<std::string>
    cotangentArgs("cotangent",
                  cl::desc("with --backward: the cotangent of a result, in "
                           "order (.npy; a sharded result's whole cotangent "
                           "or this rank's block)"));
static cl::opt<unsigned> repeat("repeat",
                                cl::desc("time this many calls (after one "
                                         "warm-up call): median and min"),
                                cl::init(0));
static cl::opt<bool>
    repack("repack",
           cl::desc("with --repeat: pack the arguments the program packs "
                    "(its weights) again in every call, as when they change "
                    "between calls (a backward's activations and "
                    "cotangents); --target=cpu without --backward"),
           cl::init(false));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "lamina-run: error: " << message << "\n";
  return 1;
}

static int fail(llvm::Error error) {
  return fail(llvm::toString(std::move(error)));
}

/// Most timed calls `--repeat` takes: every call's time is kept for the
/// median.
static constexpr unsigned kMaxRepeat = 1000000;

/// "[rank r/N] " before every line a process of a multi-rank run prints.
static std::string rankPrefix;

/// Random data for an argument of `spec` (an AllocationError when it does
/// not fit in memory).
static llvm::Expected<HostTensor> randomInput(const ArgumentSpec &spec,
                                              std::mt19937_64 &rng) {
  llvm::Expected<HostTensor> allocated = HostTensor::zeros(spec.kind, spec.shape);
  if (!allocated)
    return llvm::handleErrors(
        allocated.takeError(), [&](const AllocationError &failed) {
          return llvm::make_error<AllocationError>(
              "a random " + spec.typeText + ": " + failed.message());
        });
  HostTensor tensor = std::move(*allocated);
  if (spec.isScalar && (spec.kind == ElementKind::I64 ||
                        spec.kind == ElementKind::I32)) {
    tensor.setFromDouble(0, static_cast<double>(randomSeed));
    return tensor;
  }
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i)
    tensor.setFromDouble(i, uniform(rng));
  return tensor;
}

static std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

static void summarize(unsigned index, const HostTensor &tensor) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t n = tensor.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    double v = tensor.getAsDouble(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  llvm::outs() << rankPrefix << "result " << index << ": "
               << getElementName(tensor.kind)
               << formatShape(tensor.shape)
               << llvm::format(" min %.6g max %.6g mean %.6g\n", lo, hi,
                               n ? sum / n : 0.0);
}

/// numpy.allclose semantics; prints the largest errors. Returns whether the
/// result is within tolerance.
static bool compare(unsigned index, const HostTensor &got,
                    const HostTensor &expected) {
  if (llvm::ArrayRef(got.shape) != llvm::ArrayRef(expected.shape)) {
    llvm::outs() << rankPrefix << "result " << index << ": shape "
                 << formatShape(got.shape)
                 << " differs from the reference's "
                 << formatShape(expected.shape) << "\n";
    return false;
  }
  double maxAbs = 0, maxRel = 0;
  int64_t bad = 0, n = got.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    double a = got.getAsDouble(i), b = expected.getAsDouble(i);
    double diff = std::fabs(a - b);
    if (std::isnan(a) != std::isnan(b))
      diff = INFINITY;
    else if (std::isnan(a))
      diff = 0;
    maxAbs = std::max(maxAbs, diff);
    if (b != 0)
      maxRel = std::max(maxRel, diff / std::fabs(b));
    if (!(diff <= absoluteTolerance + relativeTolerance * std::fabs(b)))
      ++bad;
  }
  llvm::outs() << rankPrefix << "result " << index
               << llvm::format(" vs reference: max abs err %.3g, max rel err "
                               "%.3g, ",
                               maxAbs, maxRel)
               << bad << "/" << n
               << llvm::format(" beyond atol %g + rtol %g: ",
                               double(absoluteTolerance),
                               double(relativeTolerance))
               << (bad ? "MISMATCH" : "ok") << "\n";
  return bad == 0;
}

/// The cotangent of each result of `pair`: --cotangent files in order (a
/// sharded result's whole cotangent gives this rank's block), then random
/// data from the --seed stream after the arguments'.
static llvm::Error readCotangents(TrainingPair &pair, int64_t rank,
                                  int64_t worldSize,
                                  std::vector<HostTensor> &cotangents) {
  llvm::ArrayRef<ArgumentSpec> results = pair.getResults();
  if (cotangentArgs.size() > results.size())
    return llvm::createStringError(
        std::errc::invalid_argument, "@%s has %zu results, %zu --cotangent given",
        entryName.c_str(), results.size(), cotangentArgs.size());
  if (cotangentArgs.size() < results.size() && !randomInputs)
    return llvm::createStringError(
        std::errc::invalid_argument,
        "@%s has %zu results, %zu --cotangent given (add --cotangent, or "
        "--random-inputs)",
        entryName.c_str(), results.size(), cotangentArgs.size());
  std::mt19937_64 rng(randomSeed + 1);
  cotangents.clear();
  for (auto [index, spec] : llvm::enumerate(results)) {
    HostTensor whole;
    if (index < cotangentArgs.size()) {
      auto read = readNpy(cotangentArgs[index]);
      if (!read)
        return read.takeError();
      whole = std::move(*read);
    } else {
      auto random = randomInput(spec, rng);
      if (!random)
        return random.takeError();
      whole = std::move(*random);
    }
    bool isWhole = llvm::ArrayRef(whole.shape) == llvm::ArrayRef(spec.shape);
    if (spec.shardAxis && worldSize > 1 && isWhole)
      whole =
          whole.getBlock(*spec.shardAxis, rank, worldSize, spec.shardGroups);
    cotangents.push_back(std::move(whole));
  }
  return llvm::Error::success();
}

/// Puts the device grid the module declares (`lamina.grid`) in use, so
/// that its collectives run on the communicators of their axes: the MPI
/// world is split into data × pipeline × tensor ranks once.
static llvm::Error useDeclaredGrid(ModuleOp module) {
  SmallVector<GridAxis> axes = getGridAxes(module);
  if (axes.size() < 2)
    return llvm::Error::success();
  int64_t sizes[3] = {1, 1, 1}; // by MpiAxis
  for (const GridAxis &axis : axes) {
    std::optional<MpiAxis> runtimeAxis = getMpiAxisNamed(axis.name);
    if (!runtimeAxis)
      return llvm::createStringError(
          "the module's grid has an axis '" + axis.name.str() +
          "'; lamina-run runs grids of the axes dp, pp and tp");
    sizes[static_cast<int>(*runtimeAxis)] = axis.size;
  }
  int64_t ranks = sizes[0] * sizes[1] * sizes[2];
  if (ranks != mpiWorldSize())
    return llvm::createStringError(
        llvm::formatv("the module's grid has {0} ranks but the MPI world "
                      "has {1}; launch it with `mpirun.mpich -np {0}`",
                      ranks, mpiWorldSize())
            .str());
  mpiUseGrid(sizes[0], sizes[1], sizes[2]);
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerAsmPrinterCLOptions();
  registerDefaultTimingManagerCLOptions();
  registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv,
                              "Lamina: compile an IR file and run a function\n");
  if (repeat > kMaxRepeat)
    return fail("--repeat=" + llvm::Twine(repeat.getValue()) +
                " is more than the " + llvm::Twine(kMaxRepeat) +
                " timed calls lamina-run keeps");

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    return fail("cannot read '" + inputFile + "': " +
                buffer.getError().message());
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseVerifiedModule(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + inputFile + "'");
  if (worldSizeOption < 0)
    return fail("--world-size must be positive");
  if (worldSizeOption > 0)
    (*module)->setAttr(LaminaDialect::kWorldSizeAttrName,
                       IntegerAttr::get(IntegerType::get(&context, 64),
                                        worldSizeOption));
  bool onGrid = getGridAxes(*module).size() > 1;
  if (llvm::Error error = useDeclaredGrid(*module))
    return fail(llvm::toString(std::move(error)));
  // The importer's module paths (sch.mlir()), which the schedule may read.
  recordModulePaths(*module);
  if (!scheduleFile.empty() &&
      failed(applyScheduleFile(*module, scheduleFile)))
    return fail("the schedule '" + scheduleFile +
                "' failed (diagnostics above)");

  std::unique_ptr<ProgramTarget> compileTarget;
  if (target == "cpu") {
    compileTarget = std::make_unique<CpuTarget>(pipelineText);
  } else if (target == "cuda") {
    GpuArtefactOptions options;
    options.chip = chip;
    compileTarget = std::make_unique<CudaTarget>(options);
  } else {
    return fail("unknown --target '" + target + "': expected cpu or cuda");
  }
  if (!cotangentArgs.empty() && !backwardOption)
    return fail("--cotangent is for --backward");
  if (repack && backwardOption)
    return fail("--repack is for runs without --backward");

  // The compiled program, or the training pair whose forward takes the
  // arguments.
  std::unique_ptr<Program> program;
  std::optional<TrainingPair> pair;
  auto compileStart = std::chrono::steady_clock::now();
  if (backwardOption) {
    auto compiled = TrainingPair::compile(*module, entryName, *compileTarget);
    if (!compiled)
      return fail(compiled.takeError());
    pair.emplace(std::move(*compiled));
  } else {
    auto compiled =
        Program::compile(std::move(module), entryName, *compileTarget);
    if (!compiled)
      return fail(compiled.takeError());
    program = std::move(*compiled);
  }
  Program &called = pair ? pair->getForward() : *program;
  for (Program *compiled : {&called, pair ? &pair->getBackward() : nullptr})
    if (compiled)
      for (const std::string &warning : compiled->getWarnings())
        llvm::errs() << "lamina-run: warning: " << warning << "\n";
  llvm::ArrayRef<ArgumentSpec> specs = called.getInputs();
  llvm::ArrayRef<ArgumentSpec> resultSpecs =
      pair ? pair->getGradients() : program->getResults();
  auto compileStop = std::chrono::steady_clock::now();

  // Arguments: --input values in order, then random data if asked.
  if (inputArgs.size() > specs.size())
    return fail("@" + entryName + " takes " + llvm::Twine(specs.size()) +
                " arguments, " + llvm::Twine(inputArgs.size()) +
                " --input given");
  std::vector<HostTensor> args;
  for (const std::string &text : inputArgs) {
    llvm::Expected<HostTensor> arg = readRunInput(text);
    if (!arg)
      return fail(arg.takeError());
    args.push_back(std::move(*arg));
  }
  std::mt19937_64 rng(randomSeed);
  if (args.size() < specs.size()) {
    if (!randomInputs)
      return fail("@" + entryName + " takes " + llvm::Twine(specs.size()) +
                  " arguments, " + llvm::Twine(args.size()) +
                  " given (add --input, or --random-inputs)");
    for (size_t i = args.size(); i < specs.size(); ++i) {
      llvm::Expected<HostTensor> random = randomInput(specs[i], rng);
      if (!random)
        return fail(random.takeError());
      args.push_back(std::move(*random));
    }
  }

  // Weights are packed once, as a deployed program would at load time.
  auto packStart = std::chrono::steady_clock::now();
  auto ready = called.prepare(viewAll(args));
  if (!ready)
    return fail(ready.takeError());
  Program::PreparedArguments prepared = std::move(*ready);
  int64_t worldSize = called.getActiveWorldSize();
  int64_t rank = called.getRank();
  std::vector<HostTensor> cotangents;
  if (pair)
    if (llvm::Error failed =
            readCotangents(*pair, rank, worldSize, cotangents))
      return fail(std::move(failed));
  auto packStop = std::chrono::steady_clock::now();
  auto runOnce = [&]() -> llvm::Expected<std::vector<HostTensor>> {
    if (pair)
      return pair->step(prepared, args, cotangents);
    if (repack)
      if (llvm::Error error = program->repack(prepared))
        return std::move(error);
    return program->run(prepared);
  };
  // A multi-rank run's lines and files name the process's rank in the MPI
  // world: on a grid, several processes hold each tensor rank.
  bool multiRank = worldSize > 1 || onGrid;
  int64_t worldRank = onGrid ? mpiWorldRank() : rank;
  int64_t worldRanks = onGrid ? mpiWorldSize() : worldSize;
  if (multiRank) {
    rankPrefix = "[rank " + std::to_string(worldRank) + "/" +
                 std::to_string(worldRanks) + "] ";
    llvm::outs() << rankPrefix << "running in an MPI world of " << worldRanks
                 << " ranks";
    if (onGrid)
      llvm::outs() << ", tensor rank " << rank << " of " << worldSize;
    llvm::outs() << "\n";
  }
  auto outputs = runOnce();
  if (!outputs)
    return fail(outputs.takeError());

  if (repeat > 0) {
    llvm::outs() << rankPrefix << llvm::format(
        "compilation (pipeline and JIT, or GPU artefact): %.1f ms\n",
        std::chrono::duration<double>(compileStop - compileStart).count() *
            1e3);
    llvm::outs() << rankPrefix << llvm::format(
        "argument preparation (weight packing, once): %.4f ms\n",
        std::chrono::duration<double>(packStop - packStart).count() * 1e3);
    std::vector<double> seconds;
    double collectivesBefore = getMpiCollectiveSeconds();
    for (unsigned i = 0; i < repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      auto again = runOnce();
      auto stop = std::chrono::steady_clock::now();
      if (!again)
        return fail(again.takeError());
      seconds.push_back(std::chrono::duration<double>(stop - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    llvm::outs() << rankPrefix << "time over " << repeat << " calls:"
                 << llvm::format(" median %.4f ms, min %.4f ms\n",
                                 seconds[seconds.size() / 2] * 1e3,
                                 seconds.front() * 1e3);
    if (program)
      llvm::outs() << rankPrefix << "weights packed "
                   << program->getPackCount() << " times\n";
    if (worldSize > 1) {
      double total = std::accumulate(seconds.begin(), seconds.end(), 0.0);
      double collectives = getMpiCollectiveSeconds() - collectivesBefore;
      llvm::outs() << rankPrefix
                   << llvm::format("time in collectives: %.4f ms per call, "
                                   "%.1f%%\n",
                                   collectives / repeat * 1e3,
                                   100.0 * collectives / total);
    }
  }

  if (pair) {
    llvm::outs() << rankPrefix << "results: the gradients of arguments";
    for (auto [i, argument] : llvm::enumerate(pair->getGradientArguments()))
      llvm::outs() << (i ? ", " : " ") << argument;
    llvm::outs() << "\n";
  }
  for (auto [index, output] : llvm::enumerate(*outputs))
    summarize(index, output);

  if (!outputDir.empty()) {
    if (std::error_code error = llvm::sys::fs::create_directories(outputDir))
      return fail("cannot create '" + outputDir + "': " + error.message());
    for (auto [index, output] : llvm::enumerate(*outputs)) {
      llvm::SmallString<128> path(outputDir);
      // Each rank of a multi-rank run writes what it holds.
      std::string name = "result" + std::to_string(index);
      if (multiRank)
        name += ".rank" + std::to_string(worldRank);
      llvm::sys::path::append(path, name + ".npy");
      if (llvm::Error error = writeNpy(path, output))
        return fail(std::move(error));
    }
  }

  if (referenceFiles.size() > outputs->size())
    return fail("more --reference files than results");
  bool allOk = true;
  for (auto [index, path] : llvm::enumerate(referenceFiles)) {
    auto expected = readNpy(path);
    if (!expected)
      return fail(expected.takeError());
    // A sharded result is compared with this rank's block of the reference.
    const ArgumentSpec &spec = resultSpecs[index];
    if (spec.shardAxis && llvm::ArrayRef(expected->shape) ==
                              llvm::ArrayRef(spec.shape))
      *expected = expected->getBlock(*spec.shardAxis, rank, worldSize,
                                       spec.shardGroups);
    allOk &= compare(index, (*outputs)[index], *expected);
  }
  return allOk ? 0 : 1;
}
