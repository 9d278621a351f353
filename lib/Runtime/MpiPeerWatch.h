//===- MpiPeerWatch.h - Name the rank that died, end the ranks waiting ----===//
//
// When one rank of a job dies (a crash, an abort, a kill) while the others
// wait for it in a collective or a transfer, MPI leaves them waiting, or
// MPICH's launcher kills them without saying which rank failed. Each rank
// starts a notary process (MpiNotary.h) that outlives it: the notaries,
// connected on any host, agree on the rank that died first, name it on
// stderr, and end the ranks that wait for it.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_RUNTIME_MPIPEERWATCH_H
#define LAMINA_LIB_RUNTIME_MPIPEERWATCH_H

#include <string>

namespace mlir::lamina::peer_watch {

/// Exchanges process ids, host names and the hub's address with every rank
/// (collective: call on all ranks, right after MPI_Init) and starts this
/// rank's notary.
void start();

/// Records the status this rank passes to exit(): 0 is a clean end, which
/// its notary does not report.
void recordExit(int status);

/// "rank 1 (process 4242 on host)" when the notaries have found a rank
/// dead; empty otherwise (after waiting a little for their verdict).
std::string describeDeadRank();

/// Marks this rank as inside the blocking MPI call `name` while alive.
class BlockingCall {
public:
  explicit BlockingCall(const char *name);
  ~BlockingCall();
  BlockingCall(const BlockingCall &) = delete;
  BlockingCall &operator=(const BlockingCall &) = delete;
};

} // namespace mlir::lamina::peer_watch

#endif // LAMINA_LIB_RUNTIME_MPIPEERWATCH_H
