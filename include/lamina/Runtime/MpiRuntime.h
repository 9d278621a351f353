//===- MpiRuntime.h - The MPI calls of partitioned programs -----*- C++ -*-===//
//
// What convert-shard-to-lamina-mpi calls, over the MPI Lamina links
// (MPICH): the process's rank on a grid axis and the collectives along one
// on unranked memrefs (an
// unranked memref argument arrives as its rank and a pointer to the ranked
// descriptor). MPI is initialised on first use and finalised at exit.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_RUNTIME_MPIRUNTIME_H
#define LAMINA_RUNTIME_MPIRUNTIME_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

extern "C" {
/// The process's rank on grid axis `axis` (an MpiAxis value).
int64_t laminaMpiAxisRank(int64_t axis);

// Collectives over the ranks of grid axis `axis` (the last argument, an
// MpiAxis value); gathers and scatters along a tensor dim (the one before).
#define LAMINA_MPI_DECLARE(suffix)                                             \
  void laminaMpiAllReduce_##suffix(int64_t, void *, int64_t, void *, int64_t); \
  void laminaMpiAllReduceMax_##suffix(int64_t, void *, int64_t, void *,        \
                                      int64_t);                                \
  void laminaMpiAllGather_##suffix(int64_t, void *, int64_t, void *, int64_t,  \
                                   int64_t);                                   \
  void laminaMpiReduceScatter_##suffix(int64_t, void *, int64_t, void *,       \
                                       int64_t, int64_t);
LAMINA_MPI_DECLARE(f32)
LAMINA_MPI_DECLARE(f64)
LAMINA_MPI_DECLARE(f16)
LAMINA_MPI_DECLARE(bf16)
LAMINA_MPI_DECLARE(i64)
#undef LAMINA_MPI_DECLARE

// Sums over the data-parallel axis, started and completed apart
// (lamina.reduce_replicas): Start copies its operand and returns a handle
// for Wait, which writes the sum into its buffer on every replica
// (root < 0) or on replica `root` alone (the others get zeros) and divides
// it by the number of replicas when `mean` is set.
#define LAMINA_MPI_DECLARE_REPLICAS(suffix)                                    \
  int64_t laminaMpiReplicaReduceStart_##suffix(int64_t, void *, int64_t);      \
  void laminaMpiReplicaReduceWait_##suffix(int64_t, int64_t, void *, int64_t,  \
                                           int64_t);
LAMINA_MPI_DECLARE_REPLICAS(f32)
LAMINA_MPI_DECLARE_REPLICAS(f64)
LAMINA_MPI_DECLARE_REPLICAS(f16)
LAMINA_MPI_DECLARE_REPLICAS(bf16)
#undef LAMINA_MPI_DECLARE_REPLICAS
}

namespace mlir::lamina {

/// Every runtime function by name, for the JIT's symbol table.
llvm::ArrayRef<std::pair<const char *, void *>> getMpiRuntimeSymbols();

/// Seconds this process has spent inside the collectives above (including
/// waiting for the other ranks), for profiles of tensor-parallel programs.
double getMpiCollectiveSeconds();

/// Seconds this process has spent waiting for reductions over the data
/// axis to complete: what the backward's compute did not hide.
double getMpiReplicaWaitSeconds();

/// The axes of a device grid.
enum class MpiAxis { Data = 0, Pipeline = 1, Tensor = 2 };

/// The axis a device grid's axis name stands for (`lamina.grid`'s `dp`,
/// `pp`, `tp`); none for another name.
inline std::optional<MpiAxis> getMpiAxisNamed(llvm::StringRef name) {
  if (name == "dp")
    return MpiAxis::Data;
  if (name == "pp")
    return MpiAxis::Pipeline;
  if (name == "tp")
    return MpiAxis::Tensor;
  return std::nullopt;
}

/// Puts the grid of `data` × `pipeline` × `tensor` ranks in use (their
/// product is the world size; the tensor axis varies fastest, then the
/// pipeline axis), splitting the world's communicators at its first use;
/// (0, 0, 0): no grid, the tensor and pipeline axes span the world. The
/// collectives of partitioned programs run on the tensor axis, pipeline
/// transfers on the pipeline axis, replica reductions on the data axis.
void mpiUseGrid(int64_t data, int64_t pipeline, int64_t tensor);

/// This process's rank on `axis` of the grid in use, and the axis's size.
int64_t mpiAxisRank(MpiAxis axis);
int64_t mpiAxisSize(MpiAxis axis);

/// Broadcasts `bytes` at `data` from rank `root` of `axis` to its other
/// ranks (a pipeline's results from their stage, ZeRO's updated
/// parameters from their owner).
void mpiAxisBroadcast(void *data, int64_t bytes, int64_t root, MpiAxis axis);

/// Sums (or, with `maximum`, takes the maximum of) `count` doubles at
/// `data` over the ranks of `axis`, in place (the host's own reductions:
/// gradient norms).
void mpiAxisReduce(double *data, int64_t count, MpiAxis axis, bool maximum);

/// This process's rank in the MPI world, and the world's size.
int64_t mpiWorldRank();
int64_t mpiWorldSize();

/// Blocking point-to-point transfers of raw bytes between the pipeline
/// axis's ranks (pipeline stages).
void mpiSendBytes(const void *data, int64_t bytes, int64_t destination,
                  int64_t tag);
void mpiRecvBytes(void *data, int64_t bytes, int64_t source, int64_t tag);

/// A send of raw bytes that completes later (its buffer held by
/// `keepAlive` until then): a rank may go on to other stages' work while
/// the receiver is busy. mpiCompleteDeferredSends waits for all of them.
void mpiSendBytesDeferred(const void *data, int64_t bytes,
                          int64_t destination, int64_t tag,
                          std::shared_ptr<void> keepAlive);
void mpiCompleteDeferredSends();

} // namespace mlir::lamina

#endif // LAMINA_RUNTIME_MPIRUNTIME_H
