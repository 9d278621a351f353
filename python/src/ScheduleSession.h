//===- ScheduleSession.h - Python bindings of ScheduleSession ---*- C++ -*-===//

#ifndef LAMINA_PYTHON_SCHEDULESESSION_H
#define LAMINA_PYTHON_SCHEDULESESSION_H

#include <pybind11/pybind11.h>

namespace mlir::lamina::python {

/// Adds the `ScheduleSession` class to the extension module `m`.
void populateScheduleSessionBindings(pybind11::module_ &m);

} // namespace mlir::lamina::python

#endif // LAMINA_PYTHON_SCHEDULESESSION_H
