//===- ScheduleSession.cpp - Python bindings of ScheduleSession -----------===//
//
// `_lamina.ScheduleSession`: an imported program kept parsed between the
// primitives of a Python schedule, each applied with one interpreter run.
//
//===----------------------------------------------------------------------===//

#include "ScheduleSession.h"
#include "IrModule.h"

#include "lamina/InitAll.h"
#include "lamina/Lamina/Transforms/ScheduleSession.h"

#include "mlir/IR/DialectRegistry.h"

#include <string>

namespace py = pybind11;
using namespace mlir;
using namespace mlir::lamina;

namespace {

/// A session over `source`, with every dialect and extension registered;
/// ValueError with the parser's diagnostics when it does not parse.
std::unique_ptr<ScheduleSession> createSession(const std::string &source) {
  DialectRegistry registry;
  registerAllDialects(registry);
  std::string diagnostics;
  std::unique_ptr<ScheduleSession> session =
      ScheduleSession::create(registry, source, diagnostics);
  if (!session)
    throw py::value_error("cannot parse the program:\n" + diagnostics);
  ++python::getStatistics().parses;
  // A Python user reads the diagnostic, not a dump of the op it is on.
  session->getContext()->printOpOnDiagnostic(false);
  return session;
}

/// Applies `script`; ValueError with Lamina's diagnostics when it fails.
void applyScript(ScheduleSession &session, const std::string &script) {
  std::string diagnostics;
  if (failed(session.apply(script, diagnostics)))
    throw py::value_error(diagnostics);
}

} // namespace

void mlir::lamina::python::populateScheduleSessionBindings(py::module_ &m) {
  py::class_<ScheduleSession>(
      m, "ScheduleSession",
      "An IR module kept parsed in a context of its own, transformed by one "
      "transform script at a time")
      .def(py::init(&createSession), py::arg("source"))
      .def("apply", &applyScript, py::arg("script"),
           "apply the @__transform_main of a transform script; on an error "
           "the IR is left as it was")
      .def_property_readonly("ir", &ScheduleSession::getIr,
                             "the IR after the scripts applied so far")
      .def(
          "module",
          [](const ScheduleSession &session) {
            return python::IrModule(session.getContext(),
                                    session.clonePayload());
          },
          "a copy of the IR after the scripts applied so far, as a Module "
          "sharing the session's context (no parse)")
      .def_property_readonly("interpreter_runs",
                             &ScheduleSession::getInterpreterRuns,
                             "how many times the transform interpreter ran")
      .def_property_readonly("context_id", &ScheduleSession::getContextId,
                             "identifies the session's MLIRContext");
}
