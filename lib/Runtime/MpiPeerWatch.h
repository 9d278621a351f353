//===- MpiPeerWatch.h - Name the rank that died in a blocking MPI call ---===//
//
// When one rank of a job dies (a crash, an abort, a kill) while the others
// wait for it in a collective or a transfer, MPI leaves them waiting, or
// MPICH's launcher kills them without saying which rank failed. A watch
// thread checks the other ranks' processes while this rank is inside an
// MPI call, and when one is gone, exits this rank with an error naming it.
// Only ranks on the same host can be checked (by process id); for others
// the launcher's clean-up still applies.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_RUNTIME_MPIPEERWATCH_H
#define LAMINA_LIB_RUNTIME_MPIPEERWATCH_H

#include <string>

namespace mlir::lamina::peer_watch {

/// Exchanges process ids and host names with every rank (collective: call
/// on all ranks, right after MPI_Init) and starts the watch thread. The
/// thread never calls MPI.
void start();

/// "rank 1 (process 4242 on host), ..." for each rank on this host whose
/// process is gone; empty when none is (or start() did not run).
std::string describeDeadPeers();

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
