//===- IrModule.h - An IR module kept parsed, for Python --------*- C++ -*-===//
//
// What crosses the Python boundary instead of text: a module parsed once, in
// a context shared with the modules transformed from it and the programs
// compiled from it, with typed accessors for what Python reads of it (the
// training pair's metadata, LNS bases, argument layouts).
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_PYTHON_IRMODULE_H
#define LAMINA_PYTHON_IRMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

namespace mlir::lamina::python {

/// How often the extension parsed IR text and compiled a program, for
/// tests that count the work a call does.
struct Statistics {
  int64_t parses = 0;
  int64_t compiles = 0;
};
Statistics &getStatistics();

/// A context with every dialect, extension and external model registered;
/// diagnostics without a dump of the op (a Python user reads the message).
std::shared_ptr<MLIRContext> makeContext();

/// Collects the diagnostics emitted in `context` while it lives: what a
/// Python error says.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : stream(text), handler(sourceMgr, context, stream) {}
  std::string take() { return std::move(text); }

private:
  std::string text;
  llvm::raw_string_ostream stream;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler;
};

class IrModule {
public:
  IrModule(std::shared_ptr<MLIRContext> context, OwningOpRef<ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}

  /// Parses `source` into a new context (ValueError with the parser's
  /// diagnostics); the importer's name locations become module paths.
  static IrModule parse(const std::string &source);

  /// A copy after the transform script `schedule` and the pass pipeline
  /// `pipeline` (either may be empty), in the same context; ValueError with
  /// Lamina's diagnostics.
  IrModule transform(const std::string &schedule,
                     const std::string &pipeline) const;

  std::string text() const;
  /// A copy of the module, in the same context.
  OwningOpRef<ModuleOp> clone() const { return module.get().clone(); }
  const std::shared_ptr<MLIRContext> &getContext() const { return context; }
  ModuleOp get() const { return *module; }

private:
  /// Declared before the module, which it must outlive.
  std::shared_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

/// Adds the `Module` class and `statistics()` to the extension module `m`.
void populateIrModuleBindings(pybind11::module_ &m);

} // namespace mlir::lamina::python

#endif // LAMINA_PYTHON_IRMODULE_H
