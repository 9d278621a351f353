//===- NativeCode.cpp - A program's machine code in this process ----------===//

#include "lamina/Execution/NativeCode.h"

#include "lamina/Runtime/MpiRuntime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::lamina;

NativeCode::NativeCode() = default;
NativeCode::~NativeCode() = default;

/// The C interface of `function`, which the host calls.
static std::string interfaceName(llvm::StringRef function) {
  return ("_mlir_ciface_" + function).str();
}

/// The packed-interface wrapper ExecutionEngine adds for `function`.
static std::string packedName(llvm::StringRef function) {
  return "_mlir_" + interfaceName(function);
}

/// Lamina's MPI runtime, which partitioned programs call.
static llvm::orc::SymbolMap
mpiRuntimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  for (auto [name, address] : getMpiRuntimeSymbols())
    symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                               llvm::JITSymbolFlags::Exported};
  return symbols;
}

/// Inlines the C interface of each of `entries` into the packed wrapper
/// ExecutionEngine made for it, the JIT's way in: the wrapper then calls
/// the internal entry, whose unused arguments LLVM drops. Left as a call to
/// the exported interface, those arguments became poison values passed on
/// the stack, hundreds of them for a whole model's step, and instruction
/// selection of that one call took longer than the rest of the program.
static void inlineInterfacesIntoWrappers(llvm::Module &module,
                                         llvm::ArrayRef<std::string> entries) {
  for (const std::string &name : entries)
    if (llvm::Function *interface = module.getFunction(interfaceName(name)))
      if (!interface->isDeclaration())
        interface->addFnAttr(llvm::Attribute::AlwaysInline);
}

/// LLVM's -O3 pipeline on `module` for `machine` (upstream's
/// makeOptimizingTransformer, with vectorization and unrolling on) without
/// CalledValuePropagation: it annotates indirect calls, which Lamina's
/// programs never make, and its propagation over every pointer argument
/// of the internal functions grew with the number of calls; it took half
/// of a 12-layer GPT-2-width backward's compile once the layers were
/// outlined. `entries`: the functions the host calls.
static llvm::Error optimize(llvm::Module &module, llvm::TargetMachine *machine,
                            llvm::ArrayRef<std::string> entries) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassInstrumentationCallbacks instrumentation;
  instrumentation.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef pass, llvm::Any) {
        return pass != "CalledValuePropagationPass";
      });
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(machine, tuning, std::nullopt, &instrumentation);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  inlineInterfacesIntoWrappers(module, entries);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, modules);
  return llvm::Error::success();
}

static void initializeNativeTarget() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // The AVX2 transposes (lamina-cpu-lower-vectors) blend with inline asm.
  llvm::InitializeNativeTargetAsmParser();
}

bool NativeCode::usesOpenMP(ModuleOp module) {
  bool uses = false;
  module->walk([&](Operation *op) {
    uses |= op->getDialect() && op->getDialect()->getNamespace() == "omp";
  });
  return uses;
}

llvm::Expected<std::unique_ptr<NativeCode>>
NativeCode::compile(ModuleOp module, llvm::ArrayRef<std::string> functions,
                    bool keepObject, TimingScope &timing) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  initializeNativeTarget();
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return machineBuilder.takeError();
  auto machine = machineBuilder->createTargetMachine();
  if (!machine)
    return machine.takeError();
  ExecutionEngineOptions options;
  // ExecutionEngine::create translates and optimizes the module; each is
  // timed as its own stage.
  // (The options hold function_refs: both callables outlive create.)
  auto translate = [&](Operation *op, llvm::LLVMContext &context) {
    TimingScope scope = timing.nest("translate to LLVM IR");
    return translateModuleToLLVMIR(op, context);
  };
  options.llvmModuleBuilder = translate;
  std::function<llvm::Error(llvm::Module *)> transformer =
      [&](llvm::Module *llvmModule) {
        TimingScope scope = timing.nest("LLVM: optimize (O3)");
        return optimize(*llvmModule, machine->get(), functions);
      };
  SmallVector<StringRef> libraries;
  if (usesOpenMP(module))
    libraries.push_back(LAMINA_OPENMP_RUNTIME);
  options.sharedLibPaths = libraries;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableObjectDump = keepObject;
  // LLVM's perf listener writes a dump file of the JIT's code for every
  // program; only a profiling run that names where they go asks for them.
  options.enablePerfNotificationListener = std::getenv("JITDUMPDIR") != nullptr;
  auto created = ExecutionEngine::create(module, options);
  if (!created)
    return created.takeError();
  std::unique_ptr<NativeCode> code(new NativeCode());
  code->engine = std::move(*created);
  code->engine->registerSymbols(mpiRuntimeSymbols);
  // Materialize the code now (create has optimised the module; code
  // generation runs at the first lookup).
  TimingScope codegen = timing.nest("LLVM: generate code");
  for (const std::string &name : functions) {
    auto function = code->engine->lookupPacked(interfaceName(name));
    if (!function)
      return function.takeError();
    code->functions[name] = *function;
  }
  codegen.stop();
  if (keepObject) {
    // ExecutionEngine writes its object cache only to a file.
    llvm::SmallString<128> path;
    if (std::error_code error =
            llvm::sys::fs::createTemporaryFile("lamina-object", "o", path))
      return llvm::errorCodeToError(error);
    code->engine->dumpToObjectFile(path);
    auto buffer = llvm::MemoryBuffer::getFile(path);
    llvm::sys::fs::remove(path);
    if (!buffer)
      return llvm::errorCodeToError(buffer.getError());
    code->object = std::move(*buffer);
  }
  return code;
}

llvm::Expected<std::unique_ptr<NativeCode>>
NativeCode::load(llvm::MemoryBufferRef object, bool usesOpenMP,
                 llvm::ArrayRef<std::string> functions) {
  initializeNativeTarget();
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return machineBuilder.takeError();
  // Linked as ExecutionEngine links what it compiles.
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*machineBuilder))
          .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession &session) {
            return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                session, [](const llvm::MemoryBuffer &) {
                  return std::make_unique<llvm::SectionMemoryManager>();
                });
          })
          .create();
  if (!jit)
    return jit.takeError();
  llvm::orc::JITDylib &main = (*jit)->getMainJITDylib();
  char prefix = (*jit)->getDataLayout().getGlobalPrefix();
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process)
    return process.takeError();
  main.addGenerator(std::move(*process));
  if (usesOpenMP) {
    auto openmp = llvm::orc::DynamicLibrarySearchGenerator::Load(
        LAMINA_OPENMP_RUNTIME, prefix);
    if (!openmp)
      return openmp.takeError();
    main.addGenerator(std::move(*openmp));
  }
  llvm::orc::MangleAndInterner interner(main.getExecutionSession(),
                                        (*jit)->getDataLayout());
  if (llvm::Error error =
          main.define(llvm::orc::absoluteSymbols(mpiRuntimeSymbols(interner))))
    return std::move(error);
  if (llvm::Error error = (*jit)->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(object.getBuffer(),
                                               object.getBufferIdentifier())))
    return std::move(error);
  std::unique_ptr<NativeCode> code(new NativeCode());
  for (const std::string &name : functions) {
    auto address = (*jit)->lookup(packedName(name));
    if (!address)
      return address.takeError();
    code->functions[name] = address->toPtr<PackedFunction>();
  }
  code->jit = std::move(*jit);
  return code;
}

llvm::Error NativeCode::call(llvm::StringRef function,
                             llvm::ArrayRef<CallValue> args,
                             llvm::ArrayRef<CallValue> outputs) {
  auto found = functions.find(function);
  if (found == functions.end())
    return llvm::createStringError("the program has no function '" +
                                   function + "'");
  SmallVector<CallValue> values(args);
  values.append(outputs.begin(), outputs.end());
  PackedCall packed(values);
  found->second(packed.getArguments());
  return llvm::Error::success();
}
