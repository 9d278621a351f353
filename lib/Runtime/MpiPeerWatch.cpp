//===- MpiPeerWatch.cpp - Name the rank that died, end the ranks waiting --===//

#include "MpiPeerWatch.h"

#include "MpiNotary.h"

#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mlir::lamina::peer_watch {
namespace {

/// What each rank tells the others about itself.
struct Identity {
  int64_t pid;
  char host[64];
};

/// Where the hub (rank 0's notary) listens: a TCP port and the host's IPv4
/// addresses, other interfaces before loopback (network byte order).
struct HubAddress {
  uint16_t port = 0;
  uint32_t count = 0;
  uint32_t addresses[8] = {};
};

/// How long a rank tries each of the hub's addresses.
constexpr int kConnectTimeoutMs = 2000;

/// Before start(), and in jobs of one rank, the state no notary reads.
SharedState localState;
SharedState *state = &localState;

int thisRank = 0, numRanks = 1;
std::vector<std::string> labels;

int listenForNotaries(HubAddress &hub) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&address), length) ||
      listen(fd, SOMAXCONN) ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length)) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  hub.port = address.sin_port;
  ifaddrs *interfaces = nullptr;
  if (getifaddrs(&interfaces) == 0) {
    for (bool loopback : {false, true})
      for (ifaddrs *i = interfaces; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
            hub.count == std::size(hub.addresses))
          continue;
        uint32_t ip =
            reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr;
        if ((ntohl(ip) >> 24 == 127) == loopback)
          hub.addresses[hub.count++] = ip;
      }
    freeifaddrs(interfaces);
  }
  return fd;
}

int connectTo(uint32_t ip, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = ip;
  address.sin_port = port;
  int error = 0;
  socklen_t length = sizeof(error);
  pollfd writable = {fd, POLLOUT, 0};
  bool connected =
      connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) ==
          0 ||
      (errno == EINPROGRESS && poll(&writable, 1, kConnectTimeoutMs) == 1 &&
       getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
       error == 0);
  if (!connected) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

int connectToHub(const HubAddress &hub) {
  for (uint32_t i = 0; hub.port && i < hub.count; ++i)
    if (int fd = connectTo(hub.addresses[i], hub.port); fd >= 0)
      return fd;
  std::fprintf(stderr,
               "lamina MPI runtime: rank %d of %d cannot reach rank 0's "
               "notary; if a rank dies, this one may not learn which\n",
               thisRank, numRanks);
  return -1;
}

/// Starts the notary as a grandchild in a session of its own (out of the
/// process group the launcher kills, and never a child this rank's code
/// could wait for).
void startNotary(NotarySetup &setup) {
  pid_t child = fork();
  if (child == 0) {
    if (fork() != 0)
      _exit(0);
    setsid();
    runNotary(setup);
  }
  if (child > 0)
    waitpid(child, nullptr, 0);
}

/// The fatal signals a rank reports before it dies, and what ran on each
/// before (Python's, UCX's, LLVM's handlers).
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction previousActions[std::size(kFatalSignals)];
char fatalPrefix[64];

/// Says which rank dies (its own launcher may name only a process id),
/// then lets the previous handler do what it did.
void reportFatalSignal(int signal) {
  state->fatalSignal.store(signal);
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

} // namespace

void start() {
  MPI_Comm_rank(MPI_COMM_WORLD, &thisRank);
  MPI_Comm_size(MPI_COMM_WORLD, &numRanks);
  if (numRanks == 1)
    return;
  Identity self = {};
  self.pid = getpid();
  gethostname(self.host, sizeof(self.host) - 1);
  std::vector<Identity> identities(numRanks);
  MPI_Allgather(&self, sizeof(Identity), MPI_BYTE, identities.data(),
                sizeof(Identity), MPI_BYTE, MPI_COMM_WORLD);
  for (const Identity &identity : identities)
    labels.push_back("process " + std::to_string(identity.pid) + " on " +
                     identity.host);

  NotarySetup setup;
  HubAddress hub;
  if (thisRank == 0)
    setup.listenFd = listenForNotaries(hub);
  MPI_Bcast(&hub, sizeof(hub), MPI_BYTE, 0, MPI_COMM_WORLD);
  setup.connections.resize(thisRank == 0 ? numRanks : 1);
  if (thisRank != 0)
    setup.connections[0].fd = connectToHub(hub);
  setup.pollSet.resize(setup.connections.size() + 2);

  void *page = mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page != MAP_FAILED)
    state = new (page) SharedState();
  setup.rank = thisRank;
  setup.numRanks = numRanks;
  setup.rankPid = getpid();
  setup.state = state;
  setup.rankPidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  setup.labels = labels;
  if (state != &localState && setup.rankPidfd >= 0)
    startNotary(setup);
  for (int fd : {setup.rankPidfd, setup.listenFd, setup.connections[0].fd})
    if (fd >= 0)
      close(fd);
  installFatalSignalReport();
}

void recordExit(int status) { state->exitStatus.store(status); }

std::string describeDeadRank() {
  if (numRanks == 1)
    return "";
  // The notaries decide within milliseconds of a death.
  for (int i = 0; i < 200 && state->deadRank.load() < 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int dead = state->deadRank.load();
  if (dead < 0 || dead == thisRank)
    return "";
  return "rank " + std::to_string(dead) + " (" + labels[dead] + ")";
}

BlockingCall::BlockingCall(const char *name) {
  state->blockingCall.store(name);
}
BlockingCall::~BlockingCall() { state->blockingCall.store(nullptr); }

} // namespace mlir::lamina::peer_watch
