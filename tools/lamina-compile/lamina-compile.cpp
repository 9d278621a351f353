//===- lamina-compile.cpp - Ahead-of-time GPU artefacts ---------------------===//
//
// Compiles a lamina IR file with lamina-gpu-pipeline into a self-contained
// shared library: the kernels embedded as a fatbin (cubin + PTX, so that a
// newer driver can JIT the PTX), the host code as native code, Lamina's CUDA
// runtime linked in (it dlopens libcuda.so.1), libstdc++ linked statically.
// At run time it needs the CUDA driver only: no LLVM, MLIR or CUDA toolkit.
// Every function of the input is exported twice, as `<name>` (expanded
// memref descriptors) and `_mlir_ciface_<name>` (pointers to descriptors):
// device buffers in, results as trailing out-parameters.
//
//   lamina-compile model.mlir -o libmodel.so [--chip=sm_90a]
//                 [--schedule=s.mlir] [--emit-ptx=model.ptx]
//
//===----------------------------------------------------------------------===//

#include "lamina/InitAll.h"
#include "lamina/Lamina/Transforms/Passes.h"
#include "lamina/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<lamina IR file>"));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::desc("shared library to write"),
                                       cl::value_desc("file.so"));
static cl::opt<std::string> chip("chip", cl::init("sm_90a"),
                                 cl::desc("target GPU (sm_90a or sm_80, "
                                          "sm_86, sm_89, sm_90)"));
static cl::opt<std::string> features("features", cl::init("+ptx80"),
                                     cl::desc("PTX ISA version feature"));
static cl::opt<std::string> scheduleFile(
    "schedule", cl::desc("transform script applied before compiling"),
    cl::value_desc("file"));
static cl::opt<std::string> ptxFile(
    "emit-ptx", cl::desc("also write the kernels' PTX to this file"),
    cl::value_desc("file.ptx"));
static cl::opt<std::string> lnsSbdb("lns-sbdb", cl::init("ideal"),
                                    cl::desc("LNS addition: ideal or table"));
static cl::opt<std::string> runtimeArchive(
    "runtime", cl::init(LAMINA_CUDA_RUNTIME_ARCHIVE),
    cl::desc("Lamina's CUDA runtime archive to link"));
static cl::opt<std::string> linker("linker", cl::init("c++"),
                                   cl::desc("C++ compiler driver that links"));
static cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("CUDA toolkit with ptxas, fatbinary and libdevice (default: "
             "$CUDA_HOME or /usr/local/cuda)"));

/// Runs the schedule (if any) and lamina-gpu-pipeline with `format`.
static LogicalResult compile(ModuleOp module, StringRef format) {
  PassManager pm(module.getContext());
  if (!scheduleFile.empty()) {
    lamina::LaminaApplyScheduleOptions schedule;
    schedule.schedule = scheduleFile;
    pm.addPass(lamina::createLaminaApplySchedule(schedule));
  }
  lamina::GpuPipelineOptions options;
  options.chip = chip;
  options.features = features;
  options.format = format.str();
  options.lnsSbdb = lnsSbdb;
  options.cudaPath = cudaPath;
  lamina::buildLaminaGpuPipeline(pm, options);
  return pm.run(module);
}

/// Writes the PTX of every kernel module to `path`.
static LogicalResult writePtx(ModuleOp module, StringRef path) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return failure();
  }
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      file->os() << cast<gpu::ObjectAttr>(object).getObject().getValue();
  });
  file->keep();
  return success();
}

/// Runs `tool` from the toolkit's bin directory; its diagnostics are kept
/// in `log`.
static LogicalResult runTool(StringRef tool, ArrayRef<std::string> args,
                             StringRef log) {
  SmallString<128> program(lamina::findCudaToolkit(cudaPath));
  llvm::sys::path::append(program, "bin", tool);
  if (!llvm::sys::fs::can_execute(program)) {
    llvm::errs() << "cannot run " << program
                 << ": lamina-compile needs a CUDA toolkit (--cuda-path)\n";
    return failure();
  }
  SmallVector<StringRef> argv = {program};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(program, argv, std::nullopt,
                                         redirects, 0, 0, &error);
  auto output = llvm::MemoryBuffer::getFile(log);
  StringRef text = output ? (*output)->getBuffer() : StringRef();
  // ptxas reports serialised wgmma and ignored setmaxnreg as infos C75xx.
  for (StringRef line : llvm::split(text, '\n'))
    if (status != 0 || line.contains("(C75"))
      llvm::errs() << tool << ": " << line << "\n";
  if (status != 0) {
    llvm::errs() << tool << " failed" << (error.empty() ? "" : ": " + error)
                 << "\n";
    return failure();
  }
  return success();
}

/// Replaces each kernel module's PTX by a fatbin holding its cubin (ptxas
/// for `chip`) and the PTX itself, which a newer driver can JIT.
static LogicalResult packFatbins(ModuleOp module) {
  SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("lamina-compile", dir)) {
    llvm::errs() << "cannot create a temporary directory: " << ec.message()
                 << "\n";
    return failure();
  }
  auto path = [&](StringRef name) {
    SmallString<128> file(dir);
    llvm::sys::path::append(file, name);
    return std::string(file);
  };
  std::string ptx = path("kernels.ptx"), cubin = path("kernels.cubin"),
              fatbin = path("kernels.fatbin"), log = path("log.txt");
  std::string arch = StringRef(chip).drop_front(3).str(); // sm_90a → 90a
  LogicalResult result = success();
  module.walk([&](gpu::BinaryOp binary) {
    SmallVector<Attribute> packed;
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      std::error_code ec;
      {
        llvm::raw_fd_ostream out(ptx, ec);
        out << object.getObject().getValue();
      }
      if (ec || failed(runTool("ptxas", {"-arch=" + chip.getValue(), "-O3",
                                         ptx, "-o", cubin},
                               log)) ||
          failed(runTool("fatbinary",
                         {"-64", "--create=" + fatbin,
                          "--image3=kind=elf,sm=" + arch + ",file=" + cubin,
                          "--image3=kind=ptx,sm=" + arch + ",file=" + ptx},
                         log))) {
        result = failure();
        return WalkResult::interrupt();
      }
      auto bytes = llvm::MemoryBuffer::getFile(fatbin);
      if (!bytes) {
        result = failure();
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
  llvm::sys::fs::remove_directories(dir);
  return result;
}

/// Host LLVM IR → position-independent object file at `path`.
static LogicalResult emitObject(llvm::Module &module, StringRef path) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    llvm::errs() << "no host target: " << error << "\n";
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "x86-64", "", llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  module.setDataLayout(machine->createDataLayout());
  module.setTargetTriple(triple);
  std::error_code ec;
  llvm::ToolOutputFile object(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    llvm::errs() << path << ": " << ec.message() << "\n";
    return failure();
  }
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, object.os(), nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    llvm::errs() << "the host target cannot emit object files\n";
    return failure();
  }
  passes.run(module);
  object.keep();
  return success();
}

/// object + runtime → shared library, with the C++ runtime linked in.
static LogicalResult link(StringRef object) {
  auto program = llvm::sys::findProgramByName(linker);
  if (!program) {
    llvm::errs() << "cannot find the linker driver '" << linker << "'\n";
    return failure();
  }
  SmallVector<StringRef> args = {*program,
                                 "-shared",
                                 "-o",
                                 outputFile,
                                 object,
                                 runtimeArchive,
                                 "-static-libstdc++",
                                 "-static-libgcc",
                                 "-ldl",
                                 "-Wl,--no-undefined"};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0,
                                         0, &error);
  if (status != 0) {
    llvm::errs() << "linking " << outputFile << " failed"
                 << (error.empty() ? "" : ": " + error) << "\n";
    return failure();
  }
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "lamina-compile: lamina IR → a shared library of GPU kernels and their "
      "host code, needing only the CUDA driver at run time\n");

  DialectRegistry registry;
  lamina::registerAllDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  if (failed(compile(*module, "isa")) ||
      (!ptxFile.empty() && failed(writePtx(*module, ptxFile))) ||
      failed(packFatbins(*module)))
    return 1;

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> host =
      translateModuleToLLVMIR(*module, llvmContext, "lamina");
  if (!host) {
    llvm::errs() << "translating the host code to LLVM IR failed\n";
    return 1;
  }
  llvm::SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("lamina-compile", "o", objectPath)) {
    llvm::errs() << "cannot create a temporary file: " << ec.message() << "\n";
    return 1;
  }
  bool ok = succeeded(emitObject(*host, objectPath)) &&
            succeeded(link(objectPath));
  llvm::sys::fs::remove(objectPath);
  return ok ? 0 : 1;
}
