//===- MpiPeerWatch.cpp - Name the rank that died in a blocking MPI call -===//

#include "MpiPeerWatch.h"

#include <mpi.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace mlir::lamina::peer_watch {
namespace {

/// What each rank tells the others about itself.
struct Identity {
  int64_t pid;
  char host[64];
};

/// How long a rank that saw a death waits for its blocking call before it
/// exits: long enough for the other survivors to see the same death first.
constexpr std::chrono::milliseconds kGrace(1000);

/// The blocking MPI call this rank is in, or null.
std::atomic<const char *> activeCall{nullptr};

/// What start() learnt; read-only afterwards.
int thisRank = 0, numRanks = 1;
std::vector<Identity> peers;
char thisHost[64] = {};

/// Whether process `pid` is gone: no such process, or a zombie its parent
/// has not reaped yet.
bool isGone(pid_t pid) {
  if (kill(pid, 0) != 0)
    return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE *stat = std::fopen(path, "r");
  if (!stat)
    return true;
  // "pid (command) state ...": the state follows the last ')'.
  char line[512];
  size_t length = std::fread(line, 1, sizeof(line) - 1, stat);
  std::fclose(stat);
  line[length] = '\0';
  const char *close = std::strrchr(line, ')');
  return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

/// Reports the dead ranks and ends this one, if it is inside a blocking
/// call; returns otherwise (a rank may end normally after its last call).
void reportIfBlocked() {
  const char *call = activeCall.load();
  if (!call)
    return;
  std::string message =
      "lamina MPI runtime: rank " + std::to_string(thisRank) + " of " +
      std::to_string(numRanks) + ": " + describeDeadPeers() +
      " died while this rank waited in " + call + "; exiting\n";
  // One write: MPICH's launcher may kill this rank any moment now.
  (void)!write(STDERR_FILENO, message.data(), message.size());
  std::this_thread::sleep_for(kGrace);
  std::_Exit(EXIT_FAILURE);
}

/// The fatal signals a rank reports before it dies, and what ran on each
/// before (Python's, UCX's, LLVM's handlers).
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction previousActions[std::size(kFatalSignals)];
char fatalPrefix[64];

/// Says which rank dies (its own launcher may name only a process id),
/// then lets the previous handler do what it did.
void reportFatalSignal(int signal) {
  (void)!write(STDERR_FILENO, fatalPrefix, std::strlen(fatalPrefix));
  const char *name = sigabbrev_np(signal);
  (void)!write(STDERR_FILENO, name, std::strlen(name));
  (void)!write(STDERR_FILENO, "\n", 1);
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    if (kFatalSignals[i] == signal)
      sigaction(signal, &previousActions[i], nullptr);
  // A fault recurs when the handler returns; an abort is raised again.
  if (signal == SIGABRT)
    raise(signal);
}

void installFatalSignalReport() {
  std::snprintf(fatalPrefix, sizeof(fatalPrefix),
                "lamina MPI runtime: rank %d of %d dies of SIG", thisRank,
                numRanks);
  struct sigaction action = {};
  action.sa_handler = reportFatalSignal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    sigaction(kFatalSignals[i], &action, &previousActions[i]);
}

/// Waits for a peer on this host to exit (a pidfd becomes readable the
/// moment its process does, before anyone reaps it), then for this rank to
/// be blocked on it.
void watch(std::vector<pollfd> pidfds) {
  for (;;) {
    if (poll(pidfds.data(), pidfds.size(), -1) <= 0)
      continue;
    for (;;) {
      reportIfBlocked();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

} // namespace

void start() {
  MPI_Comm_rank(MPI_COMM_WORLD, &thisRank);
  MPI_Comm_size(MPI_COMM_WORLD, &numRanks);
  if (numRanks == 1)
    return;
  Identity self = {};
  self.pid = getpid();
  gethostname(self.host, sizeof(self.host) - 1);
  std::memcpy(thisHost, self.host, sizeof(thisHost));
  peers.resize(numRanks);
  MPI_Allgather(&self, sizeof(Identity), MPI_BYTE, peers.data(),
                sizeof(Identity), MPI_BYTE, MPI_COMM_WORLD);
  installFatalSignalReport();
  std::vector<pollfd> pidfds;
  for (int peer = 0; peer < numRanks; ++peer) {
    if (peer == thisRank || std::strcmp(peers[peer].host, thisHost) != 0)
      continue;
    int fd = static_cast<int>(syscall(SYS_pidfd_open, peers[peer].pid, 0));
    if (fd >= 0)
      pidfds.push_back({fd, POLLIN, 0});
  }
  if (!pidfds.empty())
    std::thread(watch, std::move(pidfds)).detach();
}

std::string describeDeadPeers() {
  std::string dead;
  for (int peer = 0; peer < static_cast<int>(peers.size()); ++peer) {
    if (peer == thisRank || std::strcmp(peers[peer].host, thisHost) != 0 ||
        !isGone(static_cast<pid_t>(peers[peer].pid)))
      continue;
    dead += (dead.empty() ? "rank " : ", rank ") + std::to_string(peer) +
            " (process " + std::to_string(peers[peer].pid) + " on " +
            peers[peer].host + ")";
  }
  return dead;
}

BlockingCall::BlockingCall(const char *name) { activeCall.store(name); }
BlockingCall::~BlockingCall() { activeCall.store(nullptr); }

} // namespace mlir::lamina::peer_watch
