//===- lamina-compile.cpp - Ahead-of-time GPU artefacts
//---------------------===//
//
// Compiles a lamina IR file with lamina-gpu-pipeline into a self-contained
// shared library: the kernels embedded as a fatbin (cubin + PTX, so that a
// newer driver can JIT the PTX), the host code as native code, Lamina's CUDA
// runtime linked in (it dlopens libcuda.so.1), libstdc++ linked statically.
// At run time it needs the CUDA driver only: no LLVM, MLIR or CUDA toolkit.
// Every function of the input is exported as `<name>` (expanded memref
// descriptors), `_mlir_ciface_<name>` (pointers to descriptors) and
// `_mlir_<name>` (packed arguments): device buffers in, results as trailing
// out-parameters.
//
//   lamina-compile model.mlir -o libmodel.so [--chip=sm_90a]
//                 [--schedule=s.mlir] [--emit-ptx=model.ptx]
//
//===----------------------------------------------------------------------===//

#include "lamina/Execution/GpuArtefact.h"
#include "lamina/InitAll.h"
#include "lamina/Support/ParseModule.h"
#include "lamina/Support/TransformScript.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("lamina-compile options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<lamina IR file>"),
                                      cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::desc("shared library to write"),
                                       cl::value_desc("file.so"),
                                       cl::cat(category));
static cl::opt<std::string> chip("chip", cl::init(mlir::lamina::kDefaultGpuChip.str()),
                                 cl::desc(mlir::lamina::gpuChipOptionHelp()),
                                 cl::cat(category));
static cl::opt<std::string> features("features", cl::init("+ptx80"),
                                     cl::desc("PTX ISA version feature"),
                                     cl::cat(category));
static cl::opt<std::string>
    scheduleFile("schedule",
                 cl::desc("transform script applied before compiling"),
                 cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    ptxFile("emit-ptx", cl::desc("also write the kernels' PTX to this file"),
            cl::value_desc("file.ptx"), cl::cat(category));
static cl::opt<std::string> lnsSbdb("lns-sbdb", cl::init("ideal"),
                                    cl::desc("LNS addition: ideal or table"),
                                    cl::cat(category));
static cl::opt<std::string>
    runtimeArchive("runtime", cl::init(lamina::getDefaultCudaRuntimeArchive()),
                   cl::desc("Lamina's CUDA runtime archive to link"),
                   cl::cat(category));
static cl::opt<std::string>
    linker("linker", cl::init(lamina::getDefaultLinker()),
           cl::desc("C++ compiler driver that links the library"),
           cl::cat(category));
static cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("CUDA toolkit with ptxas, fatbinary and libdevice (default: "
             "$CUDA_HOME or /usr/local/cuda)"),
    cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // LLVM's code generator registers hundreds of flags; they are not ours.
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "lamina-compile: lamina IR → a shared library of GPU kernels and their "
      "host code, needing only the CUDA driver at run time\n");

  DialectRegistry registry;
  lamina::registerAllDialects(registry);
  MLIRContext context(registry);
  // Errors name the op; the whole module is not printed with them.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      lamina::parseVerifiedModule(sourceMgr, &context);
  if (!module)
    return 1;
  if (!scheduleFile.empty() &&
      failed(lamina::applyScheduleFile(*module, scheduleFile)))
    return 1;

  lamina::GpuArtefactOptions options;
  options.chip = chip;
  options.features = features;
  options.lnsSbdb = lnsSbdb;
  options.cudaPath = cudaPath;
  options.ptxPath = ptxFile;
  options.runtimeArchive = runtimeArchive;
  options.linker = linker;
  if (llvm::Error failed =
          lamina::buildGpuArtefact(*module, options, outputFile)) {
    llvm::errs() << "lamina-compile: " << llvm::toString(std::move(failed))
                 << "\n";
    return 1;
  }
  return 0;
}
