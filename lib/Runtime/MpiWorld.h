//===- MpiWorld.h - MPI's initialisation and the device grid's axes -*- C++ -*-===//
//
// The communicators the runtime's calls run on. A device grid of data ×
// pipeline × tensor parallel ranks (Megatron's order: the tensor axis
// varies fastest, then the pipeline axis, then the data axis) splits the
// world once per grid shape; without one, the tensor and pipeline axes are
// the whole world and the data axis is this process alone.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_RUNTIME_MPIWORLD_H
#define LAMINA_LIB_RUNTIME_MPIWORLD_H

#include "lamina/Runtime/MpiRuntime.h"

#include <mpi.h>

namespace mlir::lamina::mpi_world {

/// Initialises MPI once (programs of one rank never call this) and
/// finalises it at exit, unless the host initialised MPI itself.
void ensureInitialized();

/// Whether several threads may call MPI at once (MPI_THREAD_MULTIPLE).
bool threadsMayCall();

/// The communicator of `axis` in the grid in use (initialises MPI).
MPI_Comm communicator(MpiAxis axis);

} // namespace mlir::lamina::mpi_world

#endif // LAMINA_LIB_RUNTIME_MPIWORLD_H
