//===- InitAll.h - Register everything Lamina provides ----------*- C++ -*-===//
//
// One place that registers Lamina's dialects, passes, pipelines and
// extensions, and the upstream ones they work with; used by lamina-opt,
// lamina-run and the Python extension alike.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_INITALL_H
#define LAMINA_INITALL_H

namespace mlir {
class DialectRegistry;
namespace lamina {

/// Adds Lamina's dialects and every upstream dialect and extension to
/// `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers Lamina's passes and pipelines and every upstream pass.
void registerAllPasses();

} // namespace lamina
} // namespace mlir

#endif // LAMINA_INITALL_H
