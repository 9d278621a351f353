//===- GpuArtefact.cpp - Ahead-of-time GPU shared libraries ---------------===//

#include "lamina/Execution/GpuArtefact.h"
#include "lamina/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::lamina;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(std::errc::invalid_argument,
                                 message.str().c_str());
}

std::string mlir::lamina::getDefaultCudaRuntimeArchive() {
  return LAMINA_CUDA_RUNTIME_ARCHIVE;
}

std::string mlir::lamina::getDefaultLinker() { return LAMINA_HOST_CXX; }

/// lamina-gpu-pipeline with PTX output.
static llvm::Error lowerToPtx(ModuleOp module,
                              const GpuArtefactOptions &options,
                              StringRef toolkit) {
  PassManager pm(module.getContext());
  GpuPipelineOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.features = options.features;
  pipeline.format = "isa";
  pipeline.lnsSbdb = options.lnsSbdb;
  pipeline.cudaPath = toolkit.str();
  buildLaminaGpuPipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return error("lamina-gpu-pipeline failed (diagnostics above)");
  return llvm::Error::success();
}

/// Writes the PTX of every kernel module to `path`.
static llvm::Error writePtx(ModuleOp module, StringRef path) {
  std::string message;
  auto file = openOutputFile(path, &message);
  if (!file)
    return error(message);
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      file->os() << cast<gpu::ObjectAttr>(object).getObject().getValue();
  });
  file->keep();
  return llvm::Error::success();
}

/// Runs `tool` of the toolkit's bin directory; its output goes to `log`,
/// which is echoed on failure. ptxas reports serialised wgmma and ignored
/// setmaxnreg as infos C75xx: those are echoed always.
static llvm::Error runTool(StringRef toolkit, StringRef tool,
                           ArrayRef<std::string> args, StringRef log) {
  SmallString<128> program(toolkit);
  llvm::sys::path::append(program, "bin", tool);
  if (!llvm::sys::fs::can_execute(program))
    return error("cannot run " + program +
                 ": building GPU artefacts needs a CUDA toolkit (--cuda-path)");
  SmallVector<StringRef> argv = {program};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects,
                                         0, 0, &message);
  auto output = llvm::MemoryBuffer::getFile(log);
  StringRef text = output ? (*output)->getBuffer() : StringRef();
  for (StringRef line : llvm::split(text, '\n'))
    if (status != 0 || line.contains("(C75"))
      llvm::errs() << tool << ": " << line << "\n";
  if (status != 0)
    return error(tool + " failed" + (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}

/// Replaces each kernel module's PTX by a fatbin holding its cubin (ptxas
/// for the chip) and the PTX itself, which a newer driver can JIT.
static llvm::Error packFatbins(ModuleOp module,
                               const GpuArtefactOptions &options,
                               StringRef toolkit, StringRef dir) {
  auto path = [&](StringRef name) {
    SmallString<128> file(dir);
    llvm::sys::path::append(file, name);
    return std::string(file);
  };
  std::string ptx = path("kernels.ptx"), cubin = path("kernels.cubin"),
              fatbin = path("kernels.fatbin"), log = path("log.txt");
  std::string arch = StringRef(options.chip).drop_front(3).str(); // 90a
  llvm::Error result = llvm::Error::success();
  module.walk([&](gpu::BinaryOp binary) {
    SmallVector<Attribute> packed;
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      std::error_code ec;
      {
        llvm::raw_fd_ostream out(ptx, ec);
        out << object.getObject().getValue();
      }
      if (ec) {
        result = error(ptx + ": " + ec.message());
        return WalkResult::interrupt();
      }
      if (llvm::Error failed = runTool(
              toolkit, "ptxas",
              {"-arch=" + options.chip, "-O3", ptx, "-o", cubin}, log)) {
        result = std::move(failed);
        return WalkResult::interrupt();
      }
      if (llvm::Error failed =
              runTool(toolkit, "fatbinary",
                      {"-64", "--create=" + fatbin,
                       "--image3=kind=elf,sm=" + arch + ",file=" + cubin,
                       "--image3=kind=ptx,sm=" + arch + ",file=" + ptx},
                      log)) {
        result = std::move(failed);
        return WalkResult::interrupt();
      }
      auto bytes = llvm::MemoryBuffer::getFile(fatbin);
      if (!bytes) {
        result = error("cannot read " + fatbin);
        return WalkResult::interrupt();
      }
      packed.push_back(gpu::ObjectAttr::get(
          module.getContext(), object.getTarget(),
          gpu::CompilationTarget::Fatbin,
          StringAttr::get(module.getContext(), (*bytes)->getBuffer()),
          object.getProperties(), object.getKernels()));
    }
    binary.setObjectsAttr(ArrayAttr::get(module.getContext(), packed));
    return WalkResult::advance();
  });
  return result;
}

/// For each `_mlir_ciface_<name>`, `_mlir_<name>(void **args)`: args[i] is
/// the address of argument i (MLIR's packed calling convention), so that a
/// host can call any entry point without knowing its C signature.
static void addPackedEntryPoints(ModuleOp module) {
  OpBuilder b(module.getBodyRegion());
  auto ptr = LLVM::LLVMPointerType::get(module.getContext());
  SmallVector<LLVM::LLVMFuncOp> interfaces;
  for (auto func : module.getOps<LLVM::LLVMFuncOp>())
    if (func.getName().starts_with("_mlir_ciface_") && !func.isExternal())
      interfaces.push_back(func);
  for (LLVM::LLVMFuncOp interface : interfaces) {
    Location loc = interface.getLoc();
    std::string name =
        "_mlir_" +
        interface.getName().drop_front(strlen("_mlir_ciface_")).str();
    b.setInsertionPointToEnd(module.getBody());
    auto packed = LLVM::LLVMFuncOp::create(
        b, loc, name,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                    {ptr}));
    Block *body = packed.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    SmallVector<Value> args;
    for (auto [i, type] :
         llvm::enumerate(interface.getFunctionType().getParams())) {
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
      Value address = LLVM::LoadOp::create(b, loc, ptr, slot);
      args.push_back(LLVM::LoadOp::create(b, loc, type, address));
    }
    LLVM::CallOp::create(b, loc, interface, args);
    LLVM::ReturnOp::create(b, loc, ValueRange());
  }
}

/// Host LLVM IR → position-independent object file at `path`.
static llvm::Error emitObject(llvm::Module &module, StringRef path) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target)
    return error("no host target: " + message);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "x86-64", "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  module.setDataLayout(machine->createDataLayout());
  module.setTargetTriple(triple);
  std::error_code ec;
  llvm::ToolOutputFile object(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return error(path + ": " + ec.message());
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, object.os(), nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return error("the host target cannot emit object files");
  passes.run(module);
  object.keep();
  return llvm::Error::success();
}

/// object + runtime → shared library, with the C++ runtime linked in.
static llvm::Error link(const GpuArtefactOptions &options, StringRef object,
                        StringRef libraryPath) {
  std::string linker =
      options.linker.empty() ? getDefaultLinker() : options.linker;
  auto program = llvm::sys::findProgramByName(linker);
  if (!program)
    return error("cannot find the linker driver '" + linker + "'");
  std::string archive = options.runtimeArchive.empty()
                            ? getDefaultCudaRuntimeArchive()
                            : options.runtimeArchive;
  SmallVector<StringRef> args = {*program,
                                 "-shared",
                                 "-o",
                                 libraryPath,
                                 object,
                                 archive,
                                 "-static-libstdc++",
                                 "-static-libgcc",
                                 "-ldl",
                                 "-Wl,--no-undefined"};
  std::string message;
  if (llvm::sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0, 0,
                                &message) != 0)
    return error("linking " + libraryPath + " failed" +
                 (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}

llvm::Error mlir::lamina::lowerGpuArtefact(ModuleOp module,
                                           const GpuArtefactOptions &options) {
  std::string toolkit = findCudaToolkit(options.cudaPath);
  if (toolkit.empty() || !llvm::sys::fs::is_directory(toolkit))
    return error("no CUDA toolkit at '" + toolkit +
                 "': building GPU artefacts needs ptxas and fatbinary "
                 "(--cuda-path, $CUDA_HOME)");
  // A failing pass names the op; the whole kernel module is not printed.
  module.getContext()->printOpOnDiagnostic(false);
  if (llvm::Error failed = lowerToPtx(module, options, toolkit))
    return failed;
  if (!options.ptxPath.empty())
    if (llvm::Error failed = writePtx(module, options.ptxPath))
      return failed;
  return llvm::Error::success();
}

llvm::Error mlir::lamina::linkGpuArtefact(ModuleOp module,
                                          const GpuArtefactOptions &options,
                                          StringRef libraryPath) {
  SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("lamina-artefact", dir))
    return error("cannot create a temporary directory: " + ec.message());
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(dir); });
  if (llvm::Error failed = packFatbins(module, options,
                                       findCudaToolkit(options.cudaPath), dir))
    return failed;
  addPackedEntryPoints(module);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> host =
      translateModuleToLLVMIR(module, llvmContext, "lamina");
  if (!host)
    return error("translating the host code to LLVM IR failed");
  SmallString<128> object(dir);
  llvm::sys::path::append(object, "host.o");
  if (llvm::Error failed = emitObject(*host, object))
    return failed;
  return link(options, object, libraryPath);
}

llvm::Error mlir::lamina::buildGpuArtefact(ModuleOp module,
                                           const GpuArtefactOptions &options,
                                           StringRef libraryPath) {
  if (llvm::Error failed = lowerGpuArtefact(module, options))
    return failed;
  return linkGpuArtefact(module, options, libraryPath);
}
