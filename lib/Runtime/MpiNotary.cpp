//===- MpiNotary.cpp - A process per rank that names the rank that died --===//

#include "MpiNotary.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iterator>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace mlir::lamina::peer_watch {
namespace {

/// A message between notaries: three native-endian int32 (every rank of a
/// job runs the same build). A notary tells the hub that its rank died; the
/// hub tells every notary which rank died first.
enum MessageKind : int32_t { kDied = 1, kVerdict = 2 };
struct Message {
  int32_t kind, rank, cause;
};
static_assert(sizeof(Message) == sizeof(Connection::pending));

/// How long a notary whose rank died waits for the hub's verdict before it
/// names its own rank.
constexpr int kVerdictWaitMs = 5000;
/// How often a notary that knows of a death checks whether its rank has
/// entered a blocking MPI call.
constexpr int kBlockedCheckMs = 20;

/// A line of text assembled without allocating, written with one write so
/// that the lines of several ranks do not interleave.
class Line {
public:
  Line &operator<<(const char *text) {
    append(text, std::strlen(text));
    return *this;
  }
  Line &operator<<(const std::string &text) {
    append(text.data(), text.size());
    return *this;
  }
  Line &operator<<(int value) { return *this << static_cast<long long>(value); }
  Line &operator<<(long long value) {
    char digits[24];
    int count = 0;
    unsigned long long magnitude =
        value < 0 ? 0ull - static_cast<unsigned long long>(value) : value;
    do {
      digits[count++] = static_cast<char>('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude);
    if (value < 0)
      digits[count++] = '-';
    while (count)
      append(&digits[--count], 1);
    return *this;
  }
  const char *c_str() {
    text[std::min(length, sizeof(text) - 1)] = '\0';
    return text;
  }
  void writeTo(int fd) const { (void)!write(fd, text, length); }

private:
  void append(const char *data, size_t size) {
    size = std::min(size, sizeof(text) - 1 - length);
    std::memcpy(text + length, data, size);
    length += size;
  }
  char text[512];
  size_t length = 0;
};

/// The end of a process that has just exited, from /proc while it is a
/// zombie its parent has not reaped (its exit_code, the last stat field).
int32_t endSeenInProc(pid_t pid) {
  Line path;
  path << "/proc/" << static_cast<long long>(pid) << "/stat";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return kEndedUnseen;
  char stat[2048];
  ssize_t length = read(fd, stat, sizeof(stat) - 1);
  close(fd);
  if (length <= 0)
    return kEndedUnseen;
  stat[length] = '\0';
  // "pid (command) state ... exit_code": the state follows the last ')'.
  const char *command = std::strrchr(stat, ')');
  if (!command || command[1] != ' ' || command[2] != 'Z')
    return kEndedUnseen;
  const char *end = stat + length;
  while (end > command && (end[-1] == '\n' || end[-1] == ' '))
    --end;
  const char *begin = end;
  while (begin > command && begin[-1] != ' ')
    --begin;
  long code = 0;
  for (const char *c = begin; c < end; ++c) {
    if (*c < '0' || *c > '9')
      return kEndedUnseen;
    code = code * 10 + (*c - '0');
  }
  if (code & 0x7f)
    return static_cast<int32_t>(code & 0x7f);
  return kExitedBase + static_cast<int32_t>((code >> 8) & 0xff);
}

Line &describeEnd(Line &line, int32_t cause) {
  if (cause > 0 && cause < kExitedBase) {
    const char *name = sigabbrev_np(cause);
    return line << "was killed by SIG" << (name ? name : "NAL");
  }
  if (cause >= kExitedBase)
    return line << "exited with status " << (cause - kExitedBase);
  return line << "ended without finishing";
}

long long nowMs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000ll + now.tv_nsec / 1000000;
}

bool sendMessage(int fd, Message message) {
  return send(fd, &message, sizeof(message), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(sizeof(message));
}

/// Reads what arrived on `connection`; returns false when it closed, and
/// passes each complete message to `handle`.
template <typename HandleT>
bool receive(Connection &connection, HandleT &&handle) {
  ssize_t got =
      recv(connection.fd, connection.pending + connection.pendingBytes,
           sizeof(connection.pending) - connection.pendingBytes, MSG_DONTWAIT);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
    close(connection.fd);
    connection.fd = -1;
    return false;
  }
  if (got > 0)
    connection.pendingBytes += static_cast<unsigned>(got);
  if (connection.pendingBytes == sizeof(Message)) {
    Message message;
    std::memcpy(&message, connection.pending, sizeof(message));
    connection.pendingBytes = 0;
    handle(message);
  }
  return true;
}

class Notary {
public:
  explicit Notary(NotarySetup &setup) : setup(setup) {}

  [[noreturn]] void run() {
    for (;;) {
      if (finished())
        _exit(0);
      waitForEvents();
      if (diedAt >= 0 && verdictRank < 0 && nowMs() - diedAt >= kVerdictWaitMs)
        decide(setup.rank, ownCause);
      if (verdictRank >= 0 && !said)
        sayWhatHappened();
    }
  }

private:
  bool isHub() const { return setup.rank == 0; }

  bool finished() const {
    if (!rankEnded)
      return false;
    if (said)
      return true;
    if (!endedCleanly)
      return false;
    // The hub relays until every other notary has gone.
    return !isHub() ||
           std::none_of(setup.connections.begin(), setup.connections.end(),
                        [](const Connection &c) { return c.fd >= 0; });
  }

  int timeoutMs() const {
    if (verdictRank >= 0 && !said)
      return kBlockedCheckMs;
    if (diedAt >= 0 && verdictRank < 0)
      return static_cast<int>(
          std::max(0ll, kVerdictWaitMs - (nowMs() - diedAt)));
    return -1;
  }

  void waitForEvents() {
    pollfd *fds = setup.pollSet.data();
    size_t count = 0;
    if (isHub())
      fds[count++] = {setup.listenFd, POLLIN, 0};
    for (const Connection &connection : setup.connections)
      if (connection.fd >= 0)
        fds[count++] = {connection.fd, POLLIN, 0};
    size_t rankIndex = count;
    if (!rankEnded)
      fds[count++] = {setup.rankPidfd, POLLIN, 0};
    if (poll(fds, count, timeoutMs()) <= 0)
      return;
    // Messages first: a verdict that has arrived explains this rank's end.
    if (isHub() && fds[0].revents)
      accept();
    for (Connection &connection : setup.connections) {
      if (connection.fd < 0)
        continue;
      if (isHub())
        receive(connection, [&](Message m) { onHubMessage(m); });
      else if (!receive(connection, [&](Message m) { onVerdict(m); }))
        onHubLost();
    }
    if (rankIndex < count && fds[rankIndex].revents)
      onRankEnded();
  }

  void accept() {
    int fd = accept4(setup.listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      return;
    for (Connection &connection : setup.connections)
      if (connection.fd < 0) {
        connection = Connection{fd, {}, 0};
        if (verdictRank >= 0)
          sendMessage(fd, {kVerdict, verdictRank, verdictCause});
        return;
      }
    close(fd);
  }

  void onHubMessage(Message message) {
    if (message.kind == kDied && verdictRank < 0 && message.rank >= 0 &&
        message.rank < setup.numRanks)
      decide(message.rank, message.cause);
  }

  void onVerdict(Message message) {
    if (message.kind != kVerdict || verdictRank >= 0 || message.rank < 0 ||
        message.rank >= setup.numRanks)
      return;
    verdictRank = message.rank;
    verdictCause = message.cause;
    setup.state->deadRank.store(verdictRank);
  }

  void onHubLost() {
    if (diedAt >= 0 && verdictRank < 0)
      decide(setup.rank, ownCause);
  }

  /// The first death: the hub's decision, told to every notary, or a
  /// notary's own when it has no hub.
  void decide(int rank, int32_t cause) {
    verdictRank = rank;
    verdictCause = cause;
    setup.state->deadRank.store(rank);
    if (isHub())
      for (const Connection &connection : setup.connections)
        if (connection.fd >= 0)
          sendMessage(connection.fd, {kVerdict, rank, cause});
  }

  void onRankEnded() {
    rankEnded = true;
    int status = setup.state->exitStatus.load();
    if (status == 0) {
      endedCleanly = true;
      if (verdictRank < 0) {
        // Nothing to say any more; a hub stays to relay without its
        // rank's stderr.
        close(STDOUT_FILENO);
        close(STDERR_FILENO);
      }
      return;
    }
    if (verdictRank >= 0)
      return; // a consequence of the death already decided
    int signal = setup.state->fatalSignal.load();
    ownCause = status > 0 ? kExitedBase + status
               : signal   ? signal
                          : endSeenInProc(setup.rankPid);
    diedAt = nowMs();
    int hub = isHub() ? -1 : setup.connections[0].fd;
    if (hub < 0 || !sendMessage(hub, {kDied, setup.rank, ownCause}))
      decide(setup.rank, ownCause);
  }

  /// Names the dead rank on this rank's stderr: the dead rank's notary says
  /// how it ended (unless its fatal-signal report did), the notary of a
  /// rank waiting in MPI says what it waited in, and ends it.
  void sayWhatHappened() {
    Line line;
    line << "lamina MPI runtime: ";
    if (verdictRank == setup.rank) {
      said = true;
      if (setup.state->fatalSignal.load())
        return;
      line << "rank " << setup.rank << " of " << setup.numRanks << " ("
           << setup.labels[setup.rank] << ") ";
      describeEnd(line, verdictCause) << "\n";
      line.writeTo(STDERR_FILENO);
      return;
    }
    const char *call = setup.state->blockingCall.load();
    if (!call) {
      // Ended outside MPI: nothing waits. Alive: check again shortly.
      said = rankEnded;
      return;
    }
    line << "rank " << setup.rank << " of " << setup.numRanks << ": "
         << "rank " << verdictRank << " (" << setup.labels[verdictRank]
         << ") died while this rank waited in " << call << "; exiting\n";
    line.writeTo(STDERR_FILENO);
    if (!rankEnded)
      kill(setup.rankPid, SIGKILL);
    said = true;
  }

  NotarySetup &setup;
  bool rankEnded = false, endedCleanly = false, said = false;
  int verdictRank = -1;
  int32_t verdictCause = kEndedUnseen, ownCause = kEndedUnseen;
  long long diedAt = -1;
};

/// Signals keep the actions the rank had installed (Python's, UCX's);
/// none of them may run here.
void resetSignals() {
  struct sigaction defaults = {};
  defaults.sa_handler = SIG_DFL;
  for (int signal = 1; signal < NSIG; ++signal)
    if (signal != SIGKILL && signal != SIGSTOP)
      sigaction(signal, &defaults, nullptr);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

/// Closes what the notary inherited from its rank (MPI's sockets and shared
/// memory, the launcher's pipes) except stderr, stdout and its own.
void closeInheritedFiles(const NotarySetup &setup) {
  int hub = setup.rank != 0 ? setup.connections[0].fd : -1;
  int keep[] = {STDOUT_FILENO, STDERR_FILENO, setup.rankPidfd, setup.listenFd,
                hub};
  std::sort(std::begin(keep), std::end(keep));
  unsigned next = 0;
  for (int fd : keep) {
    if (fd < 0 || static_cast<unsigned>(fd) < next)
      continue;
    if (static_cast<unsigned>(fd) > next)
      syscall(SYS_close_range, next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  syscall(SYS_close_range, next, ~0u, 0);
}

} // namespace

void runNotary(NotarySetup &setup) {
  closeInheritedFiles(setup);
  resetSignals();
  Notary(setup).run();
}

} // namespace mlir::lamina::peer_watch
