//===- MpiNotary.h - A process per rank that outlives it to name the dead -===//
//
// MPICH's launcher kills every rank's process group the moment one rank
// dies, naming only a process id (and not always the right one), so a rank
// cannot be trusted to report a peer's death itself: it may be killed
// first. Each rank therefore starts a notary: a small process outside the
// rank's process group, holding the rank's stderr. The notaries of a job
// are connected to rank 0's notary (the hub) over TCP, on any host. When a
// rank ends before finishing, its notary tells the hub; the hub decides
// which rank died first (deaths the launcher causes reach it later) and
// tells every notary, which then says so on its rank's stderr and ends its
// rank if that rank is waiting in MPI.
//
// The notary is forked from a multithreaded process and never execs: it
// only makes system calls and reads memory prepared before the fork.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LIB_RUNTIME_MPINOTARY_H
#define LAMINA_LIB_RUNTIME_MPINOTARY_H

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/types.h>

namespace mlir::lamina::peer_watch {

/// What a rank and its notary share, in a page mapped before the fork.
struct SharedState {
  /// The blocking MPI call the rank is in (a string literal), or null.
  std::atomic<const char *> blockingCall{nullptr};
  /// The fatal signal the rank reported before dying, or 0.
  std::atomic<int> fatalSignal{0};
  /// The status the rank passed to exit(), or -1 before it exits.
  std::atomic<int> exitStatus{-1};
  /// The rank the hub found dead first, or -1; written by the notary.
  std::atomic<int> deadRank{-1};
};
static_assert(std::atomic<const char *>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free,
              "shared between processes");

/// How a rank ended, as notaries report it: a signal number (1..64), an
/// exit status plus kExitedBase, or kEndedUnseen when neither is known.
constexpr int32_t kEndedUnseen = 0;
constexpr int32_t kExitedBase = 1000;

/// A connection between a notary and the hub, with the bytes of a message
/// read so far.
struct Connection {
  int fd = -1;
  unsigned char pending[12];
  unsigned pendingBytes = 0;
};

/// Everything the notary needs, prepared by the rank before the fork (the
/// notary allocates nothing: another thread may have held malloc's lock).
struct NotarySetup {
  int rank = 0, numRanks = 1;
  pid_t rankPid = 0;
  SharedState *state = nullptr;
  /// A pidfd of the rank: readable once it has ended.
  int rankPidfd = -1;
  /// Rank 0: the hub's listening socket; other ranks: -1.
  int listenFd = -1;
  /// The hub: room for a connection from every notary; other ranks: their
  /// connection to the hub (fd -1 when it could not be made).
  std::vector<Connection> connections;
  /// "process P on HOST" for every rank.
  std::vector<std::string> labels;
  /// Room for the poll set: the connections and two more.
  std::vector<pollfd> pollSet;
};

/// Runs the notary until its rank has ended and what it must say is said.
[[noreturn]] void runNotary(NotarySetup &setup);

} // namespace mlir::lamina::peer_watch

#endif // LAMINA_LIB_RUNTIME_MPINOTARY_H
