//===- NativeCode.h - A program's machine code in this process ---*- C++ -*-===//
//
// The JIT-compiled functions of a lowered module, the host CPU's
// Executable: compiled from the LLVM dialect with MLIR's ExecutionEngine, or
// loaded from an object file that such a compile produced (the compile
// cache).
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_NATIVECODE_H
#define LAMINA_EXECUTION_NATIVECODE_H

#include "lamina/Execution/Executable.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace mlir {
class ExecutionEngine;
namespace lamina {

class NativeCode : public Executable {
public:
  ~NativeCode() override;

  /// Translates the LLVM-dialect `module` to LLVM IR, optimizes it (O3) and
  /// generates code for this host, resolving `functions` (the functions
  /// with a C interface the host calls) now so that no call pays for JIT
  /// compilation. `keepObject` keeps the object file (getObject).
  static llvm::Expected<std::unique_ptr<NativeCode>>
  compile(ModuleOp module, llvm::ArrayRef<std::string> functions,
          bool keepObject, TimingScope &timing);

  /// Links an object file `compile` produced (with `usesOpenMP` when its
  /// code calls the OpenMP runtime) and resolves `functions`.
  static llvm::Expected<std::unique_ptr<NativeCode>>
  load(llvm::MemoryBufferRef object, bool usesOpenMP,
       llvm::ArrayRef<std::string> functions);

  /// Whether the code calls the OpenMP runtime (a multi-threaded program).
  static bool usesOpenMP(ModuleOp module);

  /// The object file of a compile with `keepObject`; null otherwise.
  const llvm::MemoryBuffer *getObject() const override { return object.get(); }

  llvm::Error call(llvm::StringRef function, llvm::ArrayRef<CallValue> args,
                   llvm::ArrayRef<CallValue> outputs) override;

private:
  NativeCode();

  using PackedFunction = void (*)(void **);
  std::unique_ptr<ExecutionEngine> engine;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::MemoryBuffer> object;
  llvm::StringMap<PackedFunction> functions;
};

} // namespace lamina
} // namespace mlir

#endif // LAMINA_EXECUTION_NATIVECODE_H
