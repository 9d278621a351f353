//===- MpiWorld.cpp - MPI's initialisation and the device grid's axes -----===//

#include "MpiWorld.h"

#include "MpiPeerWatch.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>

using namespace mlir::lamina;

namespace {
/// The communicators of one grid, by MpiAxis.
using Axes = std::array<MPI_Comm, 3>;

/// Without a grid: every rank on the tensor and pipeline axes, each its
/// own data replica.
Axes noGrid() { return {MPI_COMM_SELF, MPI_COMM_WORLD, MPI_COMM_WORLD}; }

Axes inUse = noGrid();

/// Grids split so far, by (data, pipeline, tensor) sizes: a split is
/// collective, so each shape is split once and kept.
std::map<std::array<int64_t, 3>, Axes> &splitGrids() {
  static std::map<std::array<int64_t, 3>, Axes> grids;
  return grids;
}

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// This rank's communicator among the ranks with the same `color`.
MPI_Comm split(int color) {
  MPI_Comm comm = MPI_COMM_NULL;
  if (MPI_Comm_split(MPI_COMM_WORLD, color, worldRank(), &comm) !=
      MPI_SUCCESS) {
    std::fprintf(stderr, "lamina MPI runtime: MPI_Comm_split failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }
  return comm;
}
} // namespace

void mpi_world::ensureInitialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return;
  // Threads: the progress thread of replica reductions calls MPI while
  // the main thread does.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  // Failures come back to the runtime's checks, which name a rank that
  // died, instead of ending the process inside MPI. (Communicators split
  // from the world inherit the handler.)
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  peer_watch::start();
  on_exit(
      [](int status, void *) {
        peer_watch::recordExit(status);
        // A failing rank leaves at once: finalising would wait for the
        // others, which may be waiting for it.
        if (status != 0)
          return;
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized)
          MPI_Finalize();
      },
      nullptr);
}

bool mpi_world::threadsMayCall() {
  ensureInitialized();
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

MPI_Comm mpi_world::communicator(MpiAxis axis) {
  ensureInitialized();
  return inUse[static_cast<int>(axis)];
}

void mlir::lamina::mpiUseGrid(int64_t data, int64_t pipeline,
                              int64_t tensor) {
  mpi_world::ensureInitialized();
  if (data == 0 && pipeline == 0 && tensor == 0) {
    inUse = noGrid();
    return;
  }
  if (data < 1 || pipeline < 1 || tensor < 1 ||
      data * pipeline * tensor != mpiWorldSize()) {
    std::fprintf(stderr,
                 "lamina MPI runtime: a grid of %lld x %lld x %lld ranks in "
                 "a world of %lld\n",
                 static_cast<long long>(data), static_cast<long long>(pipeline),
                 static_cast<long long>(tensor),
                 static_cast<long long>(mpiWorldSize()));
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }
  std::array<int64_t, 3> shape = {data, pipeline, tensor};
  auto found = splitGrids().find(shape);
  if (found == splitGrids().end()) {
    int rank = worldRank();
    int tensorGroup = rank / tensor;               // same data and stage
    int stage = rank / tensor % pipeline;
    int replica = rank / (tensor * pipeline);
    int withinStage = rank % tensor;
    Axes axes;
    axes[static_cast<int>(MpiAxis::Tensor)] = split(tensorGroup);
    axes[static_cast<int>(MpiAxis::Pipeline)] =
        split(replica * tensor + withinStage);
    axes[static_cast<int>(MpiAxis::Data)] =
        split(stage * tensor + withinStage);
    found = splitGrids().emplace(shape, axes).first;
  }
  inUse = found->second;
}

int64_t mlir::lamina::mpiAxisRank(MpiAxis axis) {
  int rank = 0;
  MPI_Comm_rank(mpi_world::communicator(axis), &rank);
  return rank;
}

int64_t mlir::lamina::mpiAxisSize(MpiAxis axis) {
  int size = 1;
  MPI_Comm_size(mpi_world::communicator(axis), &size);
  return size;
}

int64_t mlir::lamina::mpiWorldRank() {
  mpi_world::ensureInitialized();
  return worldRank();
}

int64_t mlir::lamina::mpiWorldSize() {
  mpi_world::ensureInitialized();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}
