//===- Executable.h - A program's code on one target ------------*- C++ -*-===//
//
// What a Program (Program.h) calls: the code of a lowered module on one
// target, the host CPU's JIT (NativeCode.h) or a GPU artefact
// (CudaTarget.h), entered through MLIR's packed C interface. A
// ProgramTarget lowers a module and builds its Executable; the Program above
// them checks, packs and shards arguments the same way for every target.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_EXECUTABLE_H
#define LAMINA_EXECUTION_EXECUTABLE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::lamina {

/// One argument of a call: a dense row-major tensor (`data`, `shape`,
/// `bytes`) or a scalar (`data` points at its value).
struct CallValue {
  void *data = nullptr;
  llvm::ArrayRef<int64_t> shape;
  size_t bytes = 0;
  bool isScalar = false;
};

/// The packed arguments of a call of `_mlir_<f>(void **)`, which unpacks
/// them for `_mlir_ciface_<f>`: one pointer per argument to where its value
/// lives; a tensor's value is a pointer to its memref descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}. The one place
/// Lamina builds memref descriptors.
class PackedCall {
public:
  explicit PackedCall(llvm::ArrayRef<CallValue> values);
  PackedCall(const PackedCall &) = delete;
  PackedCall &operator=(const PackedCall &) = delete;

  void **getArguments() { return packed.data(); }

private:
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorAddresses;
  std::vector<void *> packed;
};

/// The compiled functions of a program on one target.
class Executable {
public:
  virtual ~Executable();

  /// Calls `function` (its C-interface name without `_mlir_ciface_`) on
  /// `args` and then `outputs`, out-parameters it fills; all are in host
  /// memory (a target with memory of its own copies them there and back).
  virtual llvm::Error call(llvm::StringRef function,
                           llvm::ArrayRef<CallValue> args,
                           llvm::ArrayRef<CallValue> outputs) = 0;

  /// `call` on values already in the target's memory (a GPU's device
  /// buffers), ordered on `stream`, the target's queue (null: its
  /// default); returns without waiting where the target can. The host's
  /// memory is the host target's.
  virtual llvm::Error callResident(llvm::StringRef function,
                                   llvm::ArrayRef<CallValue> args,
                                   llvm::ArrayRef<CallValue> outputs,
                                   void *stream) {
    return call(function, args, outputs);
  }

  /// The object code the compile cache keeps (null: none).
  virtual const llvm::MemoryBuffer *getObject() const { return nullptr; }
};

/// Where a Program runs: how a module whose signature the host has read is
/// lowered and built into an Executable.
class ProgramTarget {
public:
  virtual ~ProgramTarget();

  /// "cpu", "cuda": the target in messages.
  virtual llvm::StringRef getName() const = 0;

  /// The pass pipeline of `lower` as text, which the compile cache key
  /// holds; empty when the target's code is not cached.
  virtual std::string getCachedPipeline() const { return ""; }

  /// Lowers `module` in place to what `build` takes; the Program reads the
  /// lowered module's facts (weight packing, MPI calls) in between.
  virtual llvm::Error lower(ModuleOp module, TimingScope &timing) const = 0;

  /// The code of the lowered `module`, with `functions` (the entry points
  /// the host calls) resolved now; `keepObject`: keep the object code for
  /// the compile cache.
  virtual llvm::Expected<std::unique_ptr<Executable>>
  build(ModuleOp module, llvm::ArrayRef<std::string> functions,
        bool keepObject, TimingScope &timing) const = 0;

  /// The code of a cached compile (`usesOpenMP`: it calls the OpenMP
  /// runtime), for a target with a cached pipeline.
  virtual llvm::Expected<std::unique_ptr<Executable>>
  load(llvm::MemoryBufferRef object, bool usesOpenMP,
       llvm::ArrayRef<std::string> functions) const;
};

/// The host CPU: a named pass pipeline (lamina-cpu-pipeline by default)
/// and LLVM's JIT, with compiles kept in the compile cache.
class CpuTarget : public ProgramTarget {
public:
  explicit CpuTarget(llvm::StringRef pipeline = "lamina-cpu-pipeline")
      : pipeline(pipeline.str()) {}

  llvm::StringRef getName() const override { return "cpu"; }
  std::string getCachedPipeline() const override { return pipeline; }
  llvm::Error lower(ModuleOp module, TimingScope &timing) const override;
  llvm::Expected<std::unique_ptr<Executable>>
  build(ModuleOp module, llvm::ArrayRef<std::string> functions,
        bool keepObject, TimingScope &timing) const override;
  llvm::Expected<std::unique_ptr<Executable>>
  load(llvm::MemoryBufferRef object, bool usesOpenMP,
       llvm::ArrayRef<std::string> functions) const override;

private:
  std::string pipeline;
};

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_EXECUTABLE_H
