//===- MpiRuntime.h - The MPI calls of partitioned programs -----*- C++ -*-===//
//
// What convert-shard-to-lamina-mpi calls, over the MPI Lamina links
// (MPICH): the process's rank and the collectives on unranked memrefs (an
// unranked memref argument arrives as its rank and a pointer to the ranked
// descriptor). MPI is initialised on first use and finalised at exit.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_RUNTIME_MPIRUNTIME_H
#define LAMINA_RUNTIME_MPIRUNTIME_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <utility>

extern "C" {
int64_t laminaMpiRank();
int64_t laminaMpiWorldSize();

#define LAMINA_MPI_DECLARE(suffix)                                             \
  void laminaMpiAllReduce_##suffix(int64_t, void *, int64_t, void *);          \
  void laminaMpiAllReduceMax_##suffix(int64_t, void *, int64_t, void *);       \
  void laminaMpiAllGather_##suffix(int64_t, void *, int64_t, void *, int64_t); \
  void laminaMpiReduceScatter_##suffix(int64_t, void *, int64_t, void *,       \
                                       int64_t);
LAMINA_MPI_DECLARE(f32)
LAMINA_MPI_DECLARE(f64)
LAMINA_MPI_DECLARE(f16)
LAMINA_MPI_DECLARE(bf16)
LAMINA_MPI_DECLARE(i64)
#undef LAMINA_MPI_DECLARE
}

namespace mlir::lamina {

/// Every runtime function by name, for the JIT's symbol table.
llvm::ArrayRef<std::pair<const char *, void *>> getMpiRuntimeSymbols();

/// Seconds this process has spent inside the collectives above (including
/// waiting for the other ranks), for profiles of tensor-parallel programs.
double getMpiCollectiveSeconds();

/// Blocking point-to-point transfers of raw bytes (pipeline stages).
void mpiSendBytes(const void *data, int64_t bytes, int64_t destination,
                  int64_t tag);
void mpiRecvBytes(void *data, int64_t bytes, int64_t source, int64_t tag);
void mpiBroadcastBytes(void *data, int64_t bytes, int64_t root);

} // namespace mlir::lamina

#endif // LAMINA_RUNTIME_MPIRUNTIME_H
