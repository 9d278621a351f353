//===- Program.cpp - Compile a module and run it from the host ------------===//

#include "lamina/Execution/Program.h"

#include "lamina/Execution/CompileCache.h"
#include "lamina/Execution/NativeCode.h"

#include "lamina/Lamina/IR/Lamina.h"
#include "lamina/Lns/IR/Lns.h"
#include "lamina/Pipelines/Pipelines.h"
#include "lamina/Runtime/MpiRuntime.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <malloc.h>
#include <mutex>
#include <unistd.h>

using namespace mlir;
using namespace mlir::lamina;
using llvm::createStringError;

static std::string typeToString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

static std::optional<ElementKind> getElementKind(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isInteger(64) || isa<lns::NumType>(type))
    return ElementKind::I64;
  if (type.isInteger(32))
    return ElementKind::I32;
  return std::nullopt;
}

/// The host view of `type`: a static-shaped tensor or a scalar.
llvm::Expected<ArgumentSpec> mlir::lamina::describeHostValue(Type type,
                                                              StringRef role) {
  ArgumentSpec spec;
  spec.typeText = typeToString(type);
  Type elementType = type;
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      return createStringError(std::errc::invalid_argument,
                               "%s of type %s: only static shapes can be "
                               "called from the host",
                               role.str().c_str(), spec.typeText.c_str());
    spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    elementType = tensor.getElementType();
  } else if (type.isIntOrFloat()) {
    spec.isScalar = true;
  } else {
    return createStringError(std::errc::invalid_argument,
                             "%s of type %s cannot be passed from the host",
                             role.str().c_str(), spec.typeText.c_str());
  }
  std::optional<ElementKind> kind = getElementKind(elementType);
  if (!kind)
    return createStringError(std::errc::invalid_argument,
                             "%s has unsupported element type %s",
                             role.str().c_str(), spec.typeText.c_str());
  spec.kind = *kind;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    if (llvm::Error error = checkFitsInMemory(tensor, role))
      return std::move(error);
  return spec;
}

llvm::Error mlir::lamina::checkFitsInMemory(RankedTensorType type,
                                            StringRef role) {
  // Element types that do not cross the host boundary take their width
  // (an LNS number travels as its 8-byte code).
  std::optional<ElementKind> kind = getElementKind(type.getElementType());
  if (!type.hasStaticShape() ||
      (!kind && !type.getElementType().isIntOrFloat()))
    return llvm::Error::success();
  uint64_t bytes = kind ? getElementSize(*kind)
                        : std::max<uint64_t>(
                              1, type.getElementTypeBitWidth() / 8);
  std::string what = role.str() + " of type " + typeToString(type);
  for (int64_t size : type.getShape())
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(size), &bytes))
      return llvm::make_error<AllocationError>(
          what + ": its size in bytes does not fit in 64 bits");
  return checkFitsInMemory(bytes, what);
}

/// The first value of `function` (an argument, or an op's result) too
/// large for this machine, as an error naming its op and location.
static llvm::Error checkValuesFitInMemory(func::FuncOp function) {
  llvm::Error found = llvm::Error::success();
  function.walk([&](Operation *op) {
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      std::string role;
      llvm::raw_string_ostream os(role);
      os << "the result of '" << op->getName() << "' at " << op->getLoc();
      if (llvm::Error error = checkFitsInMemory(type, role)) {
        found = std::move(error);
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return found;
}

/// The calls of `function`'s body when it only calls pipeline stages (as
/// lamina-split-pipeline-stages leaves it) and there are several.
static SmallVector<func::CallOp> getStageCalls(func::FuncOp function) {
  SmallVector<func::CallOp> calls;
  for (Operation &op : function.getBody().front().without_terminator()) {
    auto call = dyn_cast<func::CallOp>(op);
    auto callee = call ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                             call, call.getCalleeAttr())
                       : func::FuncOp();
    if (!callee || !getPipelineStage(callee))
      return {};
    calls.push_back(call);
  }
  if (calls.size() < 2)
    return {};
  return calls;
}

/// Prepares `function` to be called from the host: it never writes its
/// arguments (the host keeps them) and has a C interface.
static void makeHostCallable(func::FuncOp function) {
  MLIRContext *context = function.getContext();
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (isa<TensorType>(function.getArgumentTypes()[i]))
      function.setArgAttr(i,
                          bufferization::BufferizationDialect::kWritableAttrName,
                          BoolAttr::get(context, false));
  function->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
}

/// The weights `function` packs at load time, from the module's plan.
/// The host views of the packed weights of `function` in `module` and the
/// arguments they are packed from (`sourcesKnown`: recorded).
static llvm::Error readPackedWeights(ModuleOp module, StringRef function,
                                     SmallVector<ArgumentSpec> &specs,
                                     SmallVector<int64_t> &sources,
                                     bool &sourcesKnown) {
  PackedWeightsAttr plan = getPackedWeights(module, function);
  if (!plan)
    return llvm::Error::success();
  for (auto [index, type] : llvm::enumerate(plan.getTypes())) {
    auto spec =
        describeHostValue(type, "packed weight " + std::to_string(index));
    if (!spec)
      return spec.takeError();
    specs.push_back(*spec);
  }
  sources.assign(plan.getSources().begin(), plan.getSources().end());
  sourcesKnown = true;
  return llvm::Error::success();
}

Program::~Program() = default;

/// The function `entry` of `module`, or an error naming the ones it has.
static llvm::Expected<func::FuncOp> lookupEntry(ModuleOp module,
                                                StringRef entry) {
  auto function = module.lookupSymbol<func::FuncOp>(entry);
  if (function && !function.isDeclaration())
    return function;
  std::string known;
  for (auto candidate : module.getOps<func::FuncOp>())
    if (!candidate.isDeclaration())
      known += " @" + candidate.getSymName().str();
  return createStringError(std::errc::invalid_argument,
                           "no function @%s in the module; it defines:%s",
                           entry.str().c_str(), known.c_str());
}

llvm::Error mlir::lamina::runPassPipeline(ModuleOp module, StringRef pipeline,
                                          TimingScope *timing) {
  PassManager pm(module.getContext());
  (void)applyPassManagerCLOptions(pm);
  // The pass manager is anchored on the module: "builtin.module(a,b)" would
  // nest a second module pass manager that never runs, so take "a,b".
  StringRef passes = pipeline.trim();
  if (passes.consume_front("builtin.module(") && passes.consume_back(")"))
    pipeline = passes;
  std::string pipelineErrors;
  llvm::raw_string_ostream errorStream(pipelineErrors);
  if (failed(parsePassPipeline(pipeline, pm, errorStream)))
    return createStringError(std::errc::invalid_argument,
                             "bad pipeline '%s': %s", pipeline.str().c_str(),
                             pipelineErrors.c_str());
  DefaultTimingManager ownTiming;
  TimingScope ownScope;
  if (!timing) {
    applyDefaultTimingManagerCLOptions(ownTiming);
    ownScope = ownTiming.getRootScope();
    timing = &ownScope;
  }
  TimingScope pipelineScope = timing->nest(pipeline);
  pm.enableTiming(pipelineScope);
  if (failed(pm.run(module)))
    return createStringError(std::errc::invalid_argument,
                             "compilation with '%s' failed (diagnostics "
                             "above)",
                             pipeline.str().c_str());
  return llvm::Error::success();
}

/// The axis of a sharded layout, else nullopt.
static std::optional<int64_t> shardAxisOf(LayoutAttr layout) {
  if (layout && layout.getKind() == LayoutKind::sharded)
    return layout.getAxis();
  return std::nullopt;
}

/// Appends the host view of `type` to `specs`, sharded on `layout`'s axis;
/// in a partitioned signature the host still sees the whole tensor.
static llvm::Error addSpec(SmallVector<ArgumentSpec> &specs, Type type,
                           const std::string &role, LayoutAttr layout,
                           bool partitioned, int64_t worldSize) {
  auto spec = describeHostValue(type, role);
  if (!spec)
    return spec.takeError();
  spec->shardAxis = shardAxisOf(layout);
  if (spec->shardAxis)
    spec->shardGroups = layout.getGroups();
  if (partitioned && spec->shardAxis)
    spec->shape[*spec->shardAxis] *= worldSize;
  specs.push_back(*spec);
  return llvm::Error::success();
}

llvm::Error Program::describeSignature(func::FuncOp function,
                                       bool partitioned) {
  bool multiRank = worldSize > 1;
  for (auto [index, type] : llvm::enumerate(function.getArgumentTypes()))
    if (llvm::Error error = addSpec(
            inputs, type, "argument " + std::to_string(index),
            multiRank ? getDeclaredLayout(function.getArgument(index))
                      : LayoutAttr(),
            partitioned, worldSize))
      return error;
  for (auto [index, type] : llvm::enumerate(function.getResultTypes())) {
    LayoutAttr layout =
        multiRank ? function.getResultAttrOfType<LayoutAttr>(
                        index, LaminaDialect::kLayoutAttrName)
                  : LayoutAttr();
    if (llvm::Error error =
            addSpec(results, type, "result " + std::to_string(index), layout,
                    partitioned, worldSize))
      return error;
    if (results.back().isScalar)
      return createStringError(std::errc::invalid_argument,
                               "result %zu is a scalar; entry functions "
                               "return tensors",
                               index);
  }
  return llvm::Error::success();
}

llvm::Error Program::describePipelineStages(func::FuncOp function) {
  SmallVector<func::CallOp> calls = getStageCalls(function);
  if (calls.empty())
    return llvm::Error::success();
  stageCount = calls.size();
  // Tensor parallelism inside the stages: the stages were cut from the
  // partitioned program, and the module's ranks are each stage's tensor
  // axis. Otherwise the module declares (at most) one rank per stage.
  bool shards = llvm::any_of(
      inputs, [](const ArgumentSpec &spec) { return spec.shardAxis; });
  if (!shards) {
    if (worldSize > 1 && worldSize != stageCount)
      return createStringError(std::errc::invalid_argument,
                               "@%s has %zu pipeline stages but the module "
                               "declares %lld ranks; a pipeline runs one "
                               "stage per rank",
                               entry.c_str(), calls.size(),
                               static_cast<long long>(worldSize));
    worldSize = 1;
  }
  DenseMap<Value, ValueSource> sources;
  for (BlockArgument argument : function.getArguments())
    sources[argument] = {-1, argument.getArgNumber()};
  for (auto [index, call] : llvm::enumerate(calls)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    StageCall stage;
    stage.function = callee.getSymName().str();
    stage.rank = *getPipelineStage(callee);
    for (Value operand : call.getOperands())
      stage.operands.push_back(sources.lookup(operand));
    for (auto [i, type] : llvm::enumerate(callee.getArgumentTypes()))
      if (llvm::Error error =
              addSpec(stage.inputs, type, "stage argument " + std::to_string(i),
                      LayoutAttr(), /*partitioned=*/false, worldSize))
        return error;
    for (auto [i, type] : llvm::enumerate(callee.getResultTypes()))
      if (llvm::Error error =
              addSpec(stage.results, type, "stage result " + std::to_string(i),
                      LayoutAttr(), /*partitioned=*/false, worldSize))
        return error;
    for (auto [i, result] : llvm::enumerate(call.getResults()))
      sources[result] = {static_cast<int64_t>(index), static_cast<int64_t>(i)};
    makeHostCallable(callee);
    stageCalls.push_back(std::move(stage));
  }
  for (Value value : function.getBody().front().getTerminator()->getOperands())
    resultSources.push_back(sources.lookup(value));
  return llvm::Error::success();
}

/// Whether an op of `module` ends a pipeline stage.
static bool hasPipelineCuts(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return op->hasAttr(LaminaDialect::kPipelineCutAttrName)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `function` takes a value sharded over ranks.
static bool shardsArguments(func::FuncOp function) {
  return function &&
         llvm::any_of(function.getArguments(), [](BlockArgument argument) {
           return shardAxisOf(getDeclaredLayout(argument)).has_value();
         });
}

/// Whether the compiled `module` calls Lamina's MPI runtime.
static bool callsMpiRuntime(ModuleOp module) {
  llvm::StringSet<> runtime;
  for (auto [name, address] : getMpiRuntimeSymbols())
    runtime.insert(name);
  return llvm::any_of(module.getOps<SymbolOpInterface>(),
                      [&](SymbolOpInterface symbol) {
                        return runtime.contains(symbol.getName());
                      });
}

llvm::Error Program::readWeightPacking(ModuleOp module) {
  if (!module->hasAttr(LaminaDialect::kWeightPackingAttrName))
    return llvm::Error::success();
  if (llvm::Error error = readPackedWeights(module, entry, packedWeights,
                                            packSources, packSourcesKnown))
    return error;
  for (StageCall &stage : stageCalls)
    if (llvm::Error error = readPackedWeights(
            module, stage.function, stage.packedWeights, stage.packSources,
            stage.packSourcesKnown))
      return error;
  module->removeAttr(LaminaDialect::kWeightPackingAttrName);
  return llvm::Error::success();
}

/// Layouts are host-side metadata, read before compiling; LLVM has no use
/// for them.
static void stripLayouts(ModuleOp module) {
  module->walk([](FunctionOpInterface function) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      function.removeArgAttr(i, LaminaDialect::kLayoutAttrName);
    for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
      function.removeResultAttr(
          i, StringAttr::get(function->getContext(),
                             LaminaDialect::kLayoutAttrName));
  });
}

llvm::SmallVector<std::string> Program::getHostFunctions() const {
  llvm::SmallVector<std::string> functions = {entry};
  if (!packedWeights.empty())
    functions.push_back(entry + "_pack_weights");
  for (const StageCall &stage : stageCalls) {
    functions.push_back(stage.function);
    if (!stage.packedWeights.empty())
      functions.push_back(stage.function + "_pack_weights");
  }
  return functions;
}

void Program::settleWorldSize(bool callsMpi) {
  auto sharded = [](const ArgumentSpec &spec) {
    return spec.shardAxis.has_value();
  };
  if (stageCalls.empty() && !callsMpi && llvm::none_of(inputs, sharded) &&
      llvm::none_of(results, sharded))
    worldSize = 1;
}

// The facts of a lowered program the host needs besides its code, kept as
// attributes of an empty module in a cache entry.
static constexpr llvm::StringLiteral kCallsMpiAttr = "calls_mpi";
static constexpr llvm::StringLiteral kUsesOpenMPAttr = "uses_openmp";

/// The cache entry's facts of the lowered `module`, read before the host
/// takes its attributes.
static std::string describeForCache(ModuleOp module) {
  OpBuilder builder(module.getContext());
  OwningOpRef<ModuleOp> facts = ModuleOp::create(builder.getUnknownLoc());
  if (Attribute plan = module->getAttr(LaminaDialect::kWeightPackingAttrName))
    (*facts)->setAttr(LaminaDialect::kWeightPackingAttrName, plan);
  if (callsMpiRuntime(module))
    (*facts)->setAttr(kCallsMpiAttr, builder.getUnitAttr());
  if (NativeCode::usesOpenMP(module))
    (*facts)->setAttr(kUsesOpenMPAttr, builder.getUnitAttr());
  // Not a program: the dialect's checks of these attributes (that the
  // functions they name exist) do not apply.
  std::string text;
  llvm::raw_string_ostream os(text);
  facts->print(os, OpPrintingFlags().assumeVerified());
  return text;
}

llvm::Error Program::loadCached(MLIRContext *context,
                                const CacheEntry &cached,
                                const ProgramTarget &target) {
  OwningOpRef<ModuleOp> facts = parseSourceString<ModuleOp>(
      cached.metadata, ParserConfig(context, /*verifyAfterParse=*/false));
  if (!facts)
    return createStringError("its recorded facts do not parse");
  settleWorldSize((*facts)->hasAttr(kCallsMpiAttr));
  if (llvm::Error error = readWeightPacking(*facts))
    return error;
  auto loaded = target.load(cached.object->getMemBufferRef(),
                             (*facts)->hasAttr(kUsesOpenMPAttr),
                             getHostFunctions());
  if (!loaded)
    return loaded.takeError();
  code = std::move(*loaded);
  return llvm::Error::success();
}

/// A program allocates and frees the same large buffers on every call (its
/// temporaries, its results, the host's prepared arguments). glibc would
/// return each to the kernel (mmap'ed above its adaptive threshold, the heap
/// trimmed when its top is free) and every call would pay a page fault per
/// 4 KiB again: two thirds of a 16 MiB transpose's time, a fifth of a GPT-2
/// MLP training step's. Once per process, freed memory is kept for reuse
/// instead; LAMINA_KEEP_FREED_MEMORY=0 leaves malloc as it is configured.
static void keepFreedMemory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char *setting = std::getenv("LAMINA_KEEP_FREED_MEMORY");
    if (setting && StringRef(setting) == "0")
      return;
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

llvm::Expected<std::unique_ptr<Program>>
Program::compile(OwningOpRef<ModuleOp> module, StringRef entry,
                 StringRef pipeline) {
  return compile(std::move(module), entry, CpuTarget(pipeline));
}

llvm::Expected<std::unique_ptr<Program>>
Program::compile(OwningOpRef<ModuleOp> module, StringRef entry,
                 const ProgramTarget &target) {
  keepFreedMemory();
  // The times of this compile's stages (MLIR passes, LLVM): on stderr at
  // its end with lamina-run --mlir-timing, or LAMINA_TIMING=1 (Python).
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  if (const char *setting = std::getenv("LAMINA_TIMING"))
    timingManager.setEnabled(StringRef(setting) != "0");
  TimingScope timing = timingManager.getRootScope();
  std::unique_ptr<Program> program(new Program());
  program->entry = entry.str();
  if (llvm::Error error = lookupEntry(*module, entry).takeError())
    return std::move(error);
  // The signature the host sees is read before compiling, on the whole
  // (or partitioned) program.
  // Tensor parallelism inside pipeline stages: the stages are cut from
  // the partitioned program, each with its collectives.
  // The ranks a tensor is split over: the tensor axis of the program's grid.
  int64_t tensorRanks =
      getGridAxisSize(*module, LaminaDialect::kTensorAxisName).value_or(1);
  if (tensorRanks > 1 && !isPartitioned(*module) && hasPipelineCuts(*module) &&
      shardsArguments(module->lookupSymbol<func::FuncOp>(entry)))
    if (llvm::Error error = runPassPipeline(
            *module, "builtin.module(lamina-decompose,lamina-partition)",
            &timing))
      return std::move(error);
  if (llvm::Error error =
          runPassPipeline(*module, kHostPreparePipeline, &timing))
    return std::move(error);
  func::FuncOp function = module->lookupSymbol<func::FuncOp>(entry);
  program->worldSize = tensorRanks;
  if (llvm::Error error =
          program->describeSignature(function, isPartitioned(*module)))
    return std::move(error);
  if (llvm::Error error = program->describePipelineStages(function))
    return std::move(error);
  if (llvm::Error error = checkValuesFitInMemory(function))
    return std::move(error);

  // The host owns the inputs (weights are reused across calls): the
  // compiled code must never write them. Results come back through
  // out-parameters of a C-callable wrapper.
  makeHostCallable(function);

  // A process that compiled this program before left its code on disk.
  std::string pipeline = target.getCachedPipeline();
  CompileCache cache = pipeline.empty() ? CompileCache()
                                        : CompileCache::fromEnvironment();
  std::string key;
  if (cache.isEnabled()) {
    TimingScope lookup = timing.nest("compile cache lookup");
    key = CompileCache::computeKey(*module, entry, pipeline);
    if (std::optional<CacheEntry> cached =
            cache.lookup(key, program->warnings)) {
      llvm::Error error =
          program->loadCached(module->getContext(), *cached, target);
      if (!error) {
        program->cacheStatus = "hit";
        return program;
      }
      program->warnings.push_back(
          "the compile cache entry for this program does not load (" +
          llvm::toString(std::move(error)) +
          "); it is removed and the program compiled again");
      cache.remove(key);
      program->packedWeights.clear();
      for (StageCall &stage : program->stageCalls)
        stage.packedWeights.clear();
    }
  }

  if (llvm::Error error = target.lower(*module, timing))
    return std::move(error);
  program->settleWorldSize(callsMpiRuntime(*module));
  std::string facts = cache.isEnabled() ? describeForCache(*module) : "";
  if (llvm::Error error = program->readWeightPacking(*module))
    return std::move(error);
  stripLayouts(*module);
  auto code = target.build(*module, program->getHostFunctions(),
                           cache.isEnabled(), timing);
  if (!code)
    return code.takeError();
  program->code = std::move(*code);
  if (cache.isEnabled()) {
    cache.store(key, facts, program->code->getObject()->getMemBufferRef(),
                program->warnings);
    program->cacheStatus = "miss";
  }
  return program;
}

int64_t Program::getTensorRank() const {
  return worldSize > 1 ? mpiAxisRank(MpiAxis::Tensor) : 0;
}

int64_t Program::getStageRank() const {
  return stageCount > 1 ? mpiAxisRank(MpiAxis::Pipeline) : 0;
}

int64_t Program::getActiveStageCount() const {
  return stageCount > 1 ? mpiAxisSize(MpiAxis::Pipeline) : 1;
}

int64_t Program::getRank() const {
  return worldSize > 1 ? getTensorRank() : getStageRank();
}

int64_t Program::getActiveWorldSize() const {
  return worldSize > 1 ? mpiAxisSize(MpiAxis::Tensor) : getActiveStageCount();
}

llvm::SmallVector<int64_t>
Program::getLocalShape(const ArgumentSpec &spec) const {
  llvm::SmallVector<int64_t> shape(spec.shape);
  if (spec.shardAxis)
    shape[*spec.shardAxis] /= worldSize;
  return shape;
}

/// Fails unless the grid's `axis` ("tensor", "pipeline") has `expected`
/// ranks (`actual`).
static llvm::Error checkAxis(llvm::StringRef entry, const char *axis,
                             int64_t expected, int64_t actual) {
  if (actual == expected)
    return llvm::Error::success();
  if (actual != mpiWorldSize())
    return createStringError(
        std::errc::invalid_argument,
        "@%s is built for %lld ranks on the %s axis but the grid's %s axis "
        "has %lld",
        entry.str().c_str(), static_cast<long long>(expected), axis, axis,
        static_cast<long long>(actual));
  return createStringError(
      std::errc::invalid_argument,
      "@%s is built for %lld ranks but runs in an MPI world of %lld; launch "
      "it with `mpirun.mpich -np %lld` (Lamina uses MPICH: another MPI's "
      "launcher starts independent worlds of one rank)",
      entry.str().c_str(), static_cast<long long>(expected),
      static_cast<long long>(actual), static_cast<long long>(expected));
}

llvm::Error Program::checkWorld() const {
  if (worldSize > 1)
    if (llvm::Error error = checkAxis(entry, "tensor", worldSize,
                                      mpiAxisSize(MpiAxis::Tensor)))
      return error;
  if (stageCount > 1)
    return checkAxis(entry, "pipeline", stageCount, getActiveStageCount());
  return llvm::Error::success();
}

llvm::Expected<Program::PreparedArguments>
Program::prepare(std::vector<HostTensor> args) {
  // A pipeline runs one stage per rank, or every stage in a world of one.
  bool wholePipelineHere = !stageCalls.empty() && getActiveStageCount() == 1;
  if (!wholePipelineHere)
    if (llvm::Error error = checkWorld())
      return std::move(error);
  if (args.size() != inputs.size())
    return createStringError(std::errc::invalid_argument,
                             "@%s takes %zu inputs, got %zu", entry.c_str(),
                             inputs.size(), args.size());
  // A sharded argument comes whole (each rank takes its block) or as this
  // rank's block already: the two shapes differ on the sharded axis.
  SmallVector<bool> isBlock(args.size());
  for (auto [index, arg] : llvm::enumerate(args)) {
    bool block = false;
    if (llvm::Error error = checkArgument(index, arg, block))
      return std::move(error);
    isBlock[index] = block;
  }
  if (!stageCalls.empty() && !wholePipelineHere)
    return preparePipeline(args, isBlock);
  // Each rank takes its block of every sharded argument.
  PreparedArguments prepared;
  int64_t rank = getTensorRank();
  for (auto [arg, spec, block] : llvm::zip_equal(args, inputs, isBlock))
    prepared.tensors.push_back(spec.shardAxis && !block
                                   ? arg.getBlock(*spec.shardAxis, rank,
                                                  worldSize, spec.shardGroups)
                                   : std::move(arg));
  if (llvm::Error error = pack(prepared))
    return std::move(error);
  return prepared;
}

llvm::Error Program::checkArgument(size_t index, const HostTensor &arg,
                                   bool &isBlock) const {
  const ArgumentSpec &spec = inputs[index];
  isBlock = spec.shardAxis && worldSize > 1 &&
            llvm::ArrayRef(arg.shape) == llvm::ArrayRef(getLocalShape(spec));
  if (arg.kind != spec.kind)
    return createStringError(std::errc::invalid_argument,
                             "input %zu must be %s (element %s), got "
                             "element %s",
                             index, spec.typeText.c_str(),
                             getElementName(spec.kind).str().c_str(),
                             getElementName(arg.kind).str().c_str());
  bool shapeOk = spec.isScalar ? arg.getNumElements() == 1 &&
                                     arg.shape.size() <= 1
                               : isBlock || llvm::ArrayRef(arg.shape) ==
                                                llvm::ArrayRef(spec.shape);
  if (shapeOk)
    return llvm::Error::success();
  auto text = [](llvm::ArrayRef<int64_t> shape) {
    std::string result;
    for (auto [i, size] : llvm::enumerate(shape))
      result += (i ? ", " : "") + std::to_string(size);
    return result;
  };
  std::string block =
      spec.shardAxis && worldSize > 1
          ? " (or this rank's block [" + text(getLocalShape(spec)) + "])"
          : "";
  return createStringError(std::errc::invalid_argument,
                           "input %zu must be %s%s, got shape [%s]", index,
                           spec.typeText.c_str(), block.c_str(),
                           text(arg.shape).c_str());
}

llvm::Error Program::pack(PreparedArguments &prepared) {
  if (packedWeights.empty())
    return llvm::Error::success();
  // Packing writes every element (padding included); packing again (an
  // update) writes over the weights packed before: no new memory to fault
  // in.
  std::vector<HostTensor> packed;
  if (prepared.tensors.size() == inputs.size() + packedWeights.size())
    for (size_t i = inputs.size(); i < prepared.tensors.size(); ++i)
      packed.push_back(std::move(prepared.tensors[i]));
  else
    for (const ArgumentSpec &spec : packedWeights) {
      llvm::Expected<HostTensor> weight =
          HostTensor::uninitialized(spec.kind, spec.shape);
      if (!weight)
        return weight.takeError();
      packed.push_back(std::move(*weight));
    }
  prepared.tensors.resize(inputs.size());
  if (llvm::Error error =
          invoke(entry + "_pack_weights", prepared.tensors, inputs, packed))
    return error;
  ++packCount;
  for (HostTensor &weight : packed)
    prepared.tensors.push_back(std::move(weight));
  return llvm::Error::success();
}

llvm::Error Program::repack(PreparedArguments &prepared) {
  if (!prepared.stageArguments.empty())
    return createStringError(std::errc::invalid_argument,
                             "the arguments of a pipeline split over ranks "
                             "are prepared again, not packed again");
  return pack(prepared);
}

llvm::Error
Program::update(PreparedArguments &prepared,
                std::vector<std::pair<size_t, HostTensor>> args) {
  SmallVector<bool> isBlock;
  if (llvm::Error error = checkUpdatedArguments(args, isBlock))
    return error;
  if (!prepared.stageArguments.empty())
    return updatePipeline(prepared, std::move(args), isBlock);
  bool repack = false;
  for (auto [given, block] : llvm::zip_equal(args, isBlock)) {
    auto &[index, arg] = given;
    const ArgumentSpec &spec = inputs[index];
    prepared.tensors[index] =
        spec.shardAxis && !block
            ? arg.getBlock(*spec.shardAxis, getTensorRank(), worldSize,
                           spec.shardGroups)
            : std::move(arg);
    repack |= !packSourcesKnown ||
              llvm::is_contained(packSources, static_cast<int64_t>(index));
  }
  return repack ? pack(prepared) : llvm::Error::success();
}

llvm::Error Program::checkUpdatedArguments(
    llvm::ArrayRef<std::pair<size_t, HostTensor>> args,
    SmallVectorImpl<bool> &isBlock) const {
  for (const auto &[index, arg] : args) {
    if (index >= inputs.size())
      return createStringError(std::errc::invalid_argument,
                               "@%s takes %zu inputs, argument %zu given",
                               entry.c_str(), inputs.size(), index);
    bool block = false;
    if (llvm::Error error = checkArgument(index, arg, block))
      return error;
    isBlock.push_back(block);
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::optional<HostTensor>>>
Program::runStage(const PreparedArguments &args) {
  if (!args.stageArguments.empty())
    return runPipeline(args, /*stageLocal=*/true);
  llvm::Expected<std::vector<HostTensor>> outputs = run(args);
  if (!outputs)
    return outputs.takeError();
  return std::vector<std::optional<HostTensor>>(
      std::make_move_iterator(outputs->begin()),
      std::make_move_iterator(outputs->end()));
}

llvm::Expected<std::vector<HostTensor>>
Program::run(const PreparedArguments &args) {
  if (!args.stageArguments.empty()) {
    auto results = runPipeline(args, /*stageLocal=*/false);
    if (!results)
      return results.takeError();
    std::vector<HostTensor> whole;
    for (std::optional<HostTensor> &result : *results)
      whole.push_back(std::move(*result));
    return whole;
  }
  // The program writes every element of its results.
  std::vector<HostTensor> outputs;
  for (const ArgumentSpec &spec : results) {
    llvm::Expected<HostTensor> output =
        HostTensor::uninitialized(spec.kind, getLocalShape(spec));
    if (!output)
      return output.takeError();
    outputs.push_back(std::move(*output));
  }
  SmallVector<ArgumentSpec> specs(inputs);
  specs.append(packedWeights.begin(), packedWeights.end());
  if (llvm::Error error = invoke(entry, args.tensors, specs, outputs))
    return std::move(error);
  return outputs;
}

llvm::Error Program::invoke(llvm::StringRef function,
                            llvm::ArrayRef<HostTensor> args,
                            llvm::ArrayRef<ArgumentSpec> argSpecs,
                            std::vector<HostTensor> &outputs) {
  SmallVector<CallValue> argValues, outputValues;
  for (auto [arg, spec] : llvm::zip_equal(args, argSpecs))
    argValues.push_back({const_cast<uint8_t *>(arg.bytes.data()), arg.shape,
                         arg.bytes.size(), spec.isScalar});
  for (HostTensor &output : outputs)
    outputValues.push_back(
        {output.bytes.data(), output.shape, output.bytes.size()});
  return code->call(function, argValues, outputValues);
}

llvm::Error Program::runResident(llvm::ArrayRef<CallValue> args,
                                 llvm::ArrayRef<CallValue> outputs,
                                 void *stream) {
  if (!stageCalls.empty() || !packedWeights.empty() || worldSize > 1)
    return createStringError(std::errc::invalid_argument,
                             "@%s runs on one rank with packed weights or "
                             "stages; pass it host tensors",
                             entry.c_str());
  auto check = [&](llvm::ArrayRef<CallValue> values,
                   llvm::ArrayRef<ArgumentSpec> specs,
                   const char *what) -> llvm::Error {
    if (values.size() != specs.size())
      return createStringError(std::errc::invalid_argument,
                               "@%s takes %zu %s, got %zu", entry.c_str(),
                               specs.size(), what, values.size());
    for (auto [index, value, spec] : llvm::enumerate(values, specs))
      if (value.isScalar != spec.isScalar ||
          (!spec.isScalar && value.shape != llvm::ArrayRef(spec.shape)))
        return createStringError(std::errc::invalid_argument,
                                 "%s %zu of @%s must be %s", what, index,
                                 entry.c_str(), spec.typeText.c_str());
    return llvm::Error::success();
  };
  if (llvm::Error error = check(args, inputs, "inputs"))
    return error;
  if (llvm::Error error = check(outputs, results, "results"))
    return error;
  return code->callResident(entry, args, outputs, stream);
}
