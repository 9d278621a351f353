//===- MpiRuntime.cpp - The MPI calls of partitioned programs -------------===//

#include "lamina/Runtime/MpiRuntime.h"

#include "MpiPeerWatch.h"
#include "MpiWorld.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llvm/ADT/STLExtras.h"

namespace {

using mlir::lamina::MpiAxis;
using mlir::lamina::mpi_world::communicator;

[[noreturn]] void fail(const char *message) {
  std::fprintf(stderr, "lamina MPI runtime: %s\n", message);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void check(int status, const char *call) {
  if (status == MPI_SUCCESS)
    return;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // A rank that died is named, and this one exits: MPI_Abort could wait for
  // the dead rank.
  std::string dead = mlir::lamina::peer_watch::describeDeadRank();
  if (!dead.empty()) {
    std::fprintf(stderr,
                 "lamina MPI runtime: rank %d of %d: %s failed: %s died; "
                 "exiting\n",
                 rank, size, call, dead.c_str());
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  std::fprintf(stderr, "lamina MPI runtime: rank %d of %d: %s failed: %s\n",
               rank, size, call, text);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// Calls the blocking MPI function `name` (`call` returns its status)
/// under the peer watch.
template <typename CallT> void callMpi(const char *name, CallT &&call) {
  mlir::lamina::peer_watch::BlockingCall blocking(name);
  check(call(), name);
}

/// A contiguous row-major buffer seen through a memref descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Buffer {
  char *data;
  std::vector<int64_t> shape;

  Buffer(int64_t rank, void *descriptor, size_t elementSize) {
    auto *words = static_cast<int64_t *>(descriptor);
    auto *aligned = reinterpret_cast<char *>(words[1]);
    data = aligned + words[2] * elementSize;
    shape.assign(words + 3, words + 3 + rank);
    int64_t expected = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && words[3 + rank + d] != expected)
        fail("collective on a non-contiguous buffer");
      expected *= shape[d];
    }
  }
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t size : shape)
      n *= size;
    return n;
  }
  /// The product of the dims before `axis`.
  int64_t outer(int64_t axis) const {
    int64_t n = 1;
    for (int64_t d = 0; d < axis; ++d)
      n *= shape[d];
    return n;
  }
};

/// Time spent in collectives, accumulated by CollectiveTimer.
double collectiveSeconds = 0;

struct CollectiveTimer {
  double start = MPI_Wtime();
  ~CollectiveTimer() { collectiveSeconds += MPI_Wtime() - start; }
};

/// The grid axis a compiled collective names (an MpiAxis value).
MpiAxis gridAxis(int64_t axis) {
  if (axis < 0 || axis > static_cast<int64_t>(MpiAxis::Tensor)) {
    std::fprintf(stderr, "lamina MPI runtime: no grid axis %lld\n",
                 static_cast<long long>(axis));
    std::abort();
  }
  return static_cast<MpiAxis>(axis);
}

//===----------------------------------------------------------------------===//
// Element types: MPI sums f32/f64/i64 natively, f16/bf16 in f32
//===----------------------------------------------------------------------===//

struct F32 {
  using Storage = float;
  static MPI_Datatype type() { return MPI_FLOAT; }
};
struct F64 {
  using Storage = double;
  static MPI_Datatype type() { return MPI_DOUBLE; }
};
struct I64 {
  using Storage = int64_t;
  static MPI_Datatype type() { return MPI_INT64_T; }
};
struct F16 {
  using Storage = _Float16;
  static float widen(_Float16 x) { return static_cast<float>(x); }
  static _Float16 narrow(float x) { return static_cast<_Float16>(x); }
};
struct BF16 {
  using Storage = uint16_t;
  static float widen(uint16_t x) {
    uint32_t bits = uint32_t(x) << 16;
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  static uint16_t narrow(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    if ((bits & 0x7fffffff) > 0x7f800000) // NaN stays NaN
      return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fff + ((bits >> 16) & 1); // round half to even
    return uint16_t(bits >> 16);
  }
};

template <typename T>
constexpr bool kNative = !std::is_same_v<T, F16> && !std::is_same_v<T, BF16>;

/// Reduces `count` elements of every rank's `send` by `op` (MPI_SUM,
/// MPI_MAX) into `receive` (all-reduce) or, with `perRank` set, scatters the
/// result's blocks of `perRank` elements (reduce-scatter).
template <typename T>
void reduce(const void *send, void *receive, int64_t count, int64_t perRank,
            MPI_Op op, MPI_Comm comm) {
  if constexpr (kNative<T>) {
    if (perRank)
      callMpi("MPI_Reduce_scatter_block", [&] {
        return MPI_Reduce_scatter_block(send, receive, int(perRank), T::type(),
                                        op, comm);
      });
    else
      callMpi("MPI_Allreduce", [&] {
        return MPI_Allreduce(send, receive, int(count), T::type(), op, comm);
      });
  } else {
    using S = typename T::Storage;
    const S *in = static_cast<const S *>(send);
    std::vector<float> wide(count), reduced(perRank ? perRank : count);
    for (int64_t i = 0; i < count; ++i)
      wide[i] = T::widen(in[i]);
    reduce<F32>(wide.data(), reduced.data(), count, perRank, op, comm);
    S *out = static_cast<S *>(receive);
    for (size_t i = 0; i < reduced.size(); ++i)
      out[i] = T::narrow(reduced[i]);
  }
}

template <typename T>
void allReduce(int64_t r0, void *d0, int64_t r1, void *d1, MPI_Op op,
               MpiAxis axis) {
  Buffer in(r0, d0, sizeof(typename T::Storage));
  Buffer out(r1, d1, sizeof(typename T::Storage));
  MPI_Comm comm = communicator(axis);
  CollectiveTimer timer;
  reduce<T>(in.data, out.data, in.numElements(), 0, op, comm);
}

/// Concatenates the ranks' blocks on dim `dim`: each rank's block is
/// `outer` runs of `chunk` bytes; the result interleaves them run by run.
template <typename T>
void allGather(int64_t r0, void *d0, int64_t r1, void *d1, int64_t dim,
               MpiAxis axis) {
  size_t element = sizeof(typename T::Storage);
  Buffer in(r0, d0, element), out(r1, d1, element);
  MPI_Comm comm = communicator(axis);
  int ranks = int(mlir::lamina::mpiAxisSize(axis));
  CollectiveTimer timer;
  int64_t outer = in.outer(dim);
  int64_t bytes = in.numElements() * element;
  int64_t chunk = bytes / outer;
  // Blocks of the leading axis land in place; others are gathered, then
  // interleaved.
  std::vector<char> gathered(outer == 1 ? 0 : bytes * ranks);
  callMpi("MPI_Allgather", [&] {
    return MPI_Allgather(in.data, int(bytes), MPI_BYTE,
                         outer == 1 ? out.data : gathered.data(), int(bytes),
                         MPI_BYTE, comm);
  });
  if (outer == 1)
    return;
  for (int r = 0; r < ranks; ++r)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out.data + (o * ranks + r) * chunk,
                  gathered.data() + r * bytes + o * chunk, chunk);
}

/// Sums the ranks' whole tensors and keeps this rank's block on dim `dim`.
template <typename T>
void reduceScatter(int64_t r0, void *d0, int64_t r1, void *d1, int64_t dim,
                   MpiAxis axis) {
  size_t element = sizeof(typename T::Storage);
  Buffer in(r0, d0, element), out(r1, d1, element);
  MPI_Comm comm = communicator(axis);
  int ranks = int(mlir::lamina::mpiAxisSize(axis));
  CollectiveTimer timer;
  int64_t outer = in.outer(dim);
  int64_t perRank = out.numElements();
  if (outer == 1) {
    reduce<T>(in.data, out.data, in.numElements(), perRank, MPI_SUM, comm);
    return;
  }
  // Reorder [outer, ranks, chunk] into [ranks, outer, chunk] so that each
  // rank's block is contiguous, as MPI_Reduce_scatter_block expects.
  int64_t chunk = perRank / outer * element;
  std::vector<char> blocks(in.numElements() * element);
  for (int r = 0; r < ranks; ++r)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(blocks.data() + (r * outer + o) * chunk,
                  in.data + (o * ranks + r) * chunk, chunk);
  reduce<T>(blocks.data(), out.data, in.numElements(), perRank, MPI_SUM,
            comm);
}

//===----------------------------------------------------------------------===//
// Operations in flight: gradient reductions over the data axis, which start
// as each gradient is final and complete before the backward returns, and
// pipeline sends that complete while the sender goes on
//===----------------------------------------------------------------------===//

/// The reductions over the data axis and the deferred pipeline sends in
/// flight, and a thread that moves them on while the program computes:
/// MPICH advances non-blocking operations only inside MPI calls, and
/// compiled code makes none between an operation's start and its end. The
/// thread tests the requests every kProgressInterval (kSendInterval while a
/// send is pending) and sleeps in between, leaving the core to the
/// computation; without MPI_THREAD_MULTIPLE, the starts alone move them on.
class PendingRequests {
public:
  /// A handle for `request`.
  int64_t add(MPI_Request request) {
    std::lock_guard<std::mutex> lock(mutex);
    requests.push_back(request);
    ++open;
    ++unwaited;
    startThreadOnce();
    progress.notify_one();
    return int64_t(requests.size()) - 1;
  }

  /// Completes the request of `handle`.
  void wait(int64_t handle) {
    std::lock_guard<std::mutex> lock(mutex);
    MPI_Request &request = requests[handle];
    if (request != MPI_REQUEST_NULL) {
      callMpi("MPI_Wait",
              [&] { return MPI_Wait(&request, MPI_STATUS_IGNORE); });
      --open;
    }
    if (--unwaited == 0)
      requests.clear();
  }

  /// A send whose buffer `keepAlive` holds until it completes.
  void addSend(MPI_Request request, std::shared_ptr<void> keepAlive) {
    std::lock_guard<std::mutex> lock(mutex);
    sends.emplace_back(request, std::move(keepAlive));
    ++open;
    startThreadOnce();
    progress.notify_one();
  }

  /// Completes every deferred send.
  void completeSends() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &send : sends) {
      MPI_Request &request = send.first;
      if (request == MPI_REQUEST_NULL)
        continue;
      callMpi("MPI_Wait",
              [&] { return MPI_Wait(&request, MPI_STATUS_IGNORE); });
      --open;
    }
    sends.clear();
  }

  /// Tests every request in flight (the thread, or a start without it);
  /// completed sends release their buffers.
  void testAll() {
    for (MPI_Request &request : requests)
      test(request);
    for (auto &[request, keepAlive] : sends)
      if (test(request))
        keepAlive.reset();
  }

  /// testAll() when no thread does it.
  void progressWithoutThread() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!threadStarted)
      testAll();
  }

private:
  /// Tests `request`; whether it completed now.
  bool test(MPI_Request &request) {
    if (request == MPI_REQUEST_NULL)
      return false;
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done)
      --open;
    return done;
  }

  static constexpr auto kProgressInterval = std::chrono::microseconds(1000);
  static constexpr auto kSendInterval = std::chrono::microseconds(20);

  void startThreadOnce() {
    if (threadStarted || !mlir::lamina::mpi_world::threadsMayCall())
      return;
    threadStarted = true;
    std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex);
      for (;;) {
        progress.wait(lock, [&] { return open > 0; });
        testAll();
        // A large send moves in many small steps, each waiting for the
        // receiver: pending sends are tested more often.
        auto interval = llvm::any_of(sends,
                                     [](const auto &send) {
                                       return send.first != MPI_REQUEST_NULL;
                                     })
                            ? kSendInterval
                            : kProgressInterval;
        lock.unlock();
        std::this_thread::sleep_for(interval);
        lock.lock();
      }
    }).detach();
  }

  std::mutex mutex;
  std::condition_variable progress;
  std::vector<MPI_Request> requests;
  std::vector<std::pair<MPI_Request, std::shared_ptr<void>>> sends;
  int64_t open = 0;     // requests and sends not yet complete
  int64_t unwaited = 0; // handles not yet waited for
  bool threadStarted = false;
};

/// The process's reductions in flight (never destroyed: the thread may
/// still wait on it at exit).
PendingRequests &pendingRequests() {
  static auto *pending = new PendingRequests;
  return *pending;
}

/// Seconds spent waiting for them: the communication the backward's
/// compute did not hide.
double replicaWaitSeconds = 0;

/// A reduction over the data axis in flight: the operand's copy, which
/// the reduction sums in place, and its request in pendingRequests (-1:
/// summed at once).
struct ReplicaReduction {
  std::vector<char> sum;
  int64_t request = -1;
};

/// The reductions started and not yet waited for; a handle indexes it.
std::vector<ReplicaReduction> &replicaReductions() {
  static std::vector<ReplicaReduction> reductions;
  return reductions;
}
int64_t unwaitedReplicaReductions = 0;

/// Whether the sum arrives on this replica: on every one (`root` < 0), or
/// on `root` alone.
bool receivesReplicaSum(int64_t root) {
  return root < 0 || root == mlir::lamina::mpiAxisRank(MpiAxis::Data);
}

/// Starts summing `d0` over the data axis, on every replica (`root` < 0) or
/// on replica `root` only; a handle for waitReplicaReduce. The sum is made
/// in a copy of `d0` taken here: the caller's buffer is free once this
/// returns (the compiled code may pass a block's own buffer), and only the
/// handle travels to the wait. f16 and bf16 are summed in f32, at once.
template <typename T>
int64_t startReplicaReduce(int64_t r0, void *d0, int64_t root) {
  Buffer in(r0, d0, sizeof(typename T::Storage));
  size_t bytes = in.numElements() * sizeof(typename T::Storage);
  MPI_Comm replicas = communicator(MpiAxis::Data);
  pendingRequests().progressWithoutThread();
  ReplicaReduction reduction;
  if constexpr (kNative<T>) {
    bool receives = receivesReplicaSum(root);
    reduction.sum.assign(in.data, in.data + bytes);
    void *sum = reduction.sum.data();
    MPI_Request request = MPI_REQUEST_NULL;
    if (root < 0)
      check(MPI_Iallreduce(MPI_IN_PLACE, sum, int(in.numElements()),
                           T::type(), MPI_SUM, replicas, &request),
            "MPI_Iallreduce");
    else
      check(MPI_Ireduce(receives ? MPI_IN_PLACE : sum,
                        receives ? sum : nullptr, int(in.numElements()),
                        T::type(), MPI_SUM, int(root), replicas, &request),
            "MPI_Ireduce");
    reduction.request = pendingRequests().add(request);
  } else {
    reduction.sum.resize(bytes);
    reduce<T>(in.data, reduction.sum.data(), in.numElements(), 0, MPI_SUM,
              replicas);
  }
  replicaReductions().push_back(std::move(reduction));
  ++unwaitedReplicaReductions;
  return int64_t(replicaReductions().size()) - 1;
}

/// Completes the reduction `handle` into `d1` (zeros on a replica other
/// than `root`) and, with `mean`, divides the sum by the number of
/// replicas where it arrived (`root` as at the start).
template <typename T>
void waitReplicaReduce(int64_t handle, int64_t r1, void *d1, int64_t root,
                       int64_t mean) {
  Buffer out(r1, d1, sizeof(typename T::Storage));
  ReplicaReduction &reduction = replicaReductions()[handle];
  if (reduction.request >= 0) {
    double start = MPI_Wtime();
    pendingRequests().wait(reduction.request);
    replicaWaitSeconds += MPI_Wtime() - start;
  }
  bool receives = receivesReplicaSum(root);
  if (receives)
    std::memcpy(out.data, reduction.sum.data(), reduction.sum.size());
  else
    std::memset(out.data, 0, reduction.sum.size());
  reduction = ReplicaReduction();
  if (--unwaitedReplicaReductions == 0)
    replicaReductions().clear();
  if (!mean || !receives)
    return;
  auto replicas =
      static_cast<float>(mlir::lamina::mpiAxisSize(MpiAxis::Data));
  auto *values = reinterpret_cast<typename T::Storage *>(out.data);
  for (int64_t i = 0, e = out.numElements(); i < e; ++i) {
    if constexpr (kNative<T>)
      values[i] /= static_cast<typename T::Storage>(replicas);
    else
      values[i] = T::narrow(T::widen(values[i]) / replicas);
  }
}

} // namespace

extern "C" {
int64_t laminaMpiAxisRank(int64_t axis) {
  return mlir::lamina::mpiAxisRank(gridAxis(axis));
}

#define LAMINA_MPI_DEFINE(suffix, T)                                           \
  void laminaMpiAllReduce_##suffix(int64_t r0, void *d0, int64_t r1,           \
                                   void *d1, int64_t axis) {                   \
    allReduce<T>(r0, d0, r1, d1, MPI_SUM, gridAxis(axis));                     \
  }                                                                            \
  void laminaMpiAllReduceMax_##suffix(int64_t r0, void *d0, int64_t r1,        \
                                      void *d1, int64_t axis) {                \
    allReduce<T>(r0, d0, r1, d1, MPI_MAX, gridAxis(axis));                     \
  }                                                                            \
  void laminaMpiAllGather_##suffix(int64_t r0, void *d0, int64_t r1, void *d1, \
                                   int64_t dim, int64_t axis) {                \
    allGather<T>(r0, d0, r1, d1, dim, gridAxis(axis));                         \
  }                                                                            \
  void laminaMpiReduceScatter_##suffix(int64_t r0, void *d0, int64_t r1,       \
                                       void *d1, int64_t dim, int64_t axis) {  \
    reduceScatter<T>(r0, d0, r1, d1, dim, gridAxis(axis));                     \
  }
LAMINA_MPI_DEFINE(f32, F32)
LAMINA_MPI_DEFINE(f64, F64)
LAMINA_MPI_DEFINE(f16, F16)
LAMINA_MPI_DEFINE(bf16, BF16)
LAMINA_MPI_DEFINE(i64, I64)
#undef LAMINA_MPI_DEFINE

#define LAMINA_MPI_DEFINE_REPLICAS(suffix, T)                                  \
  int64_t laminaMpiReplicaReduceStart_##suffix(int64_t r0, void *d0,          \
                                               int64_t root) {                 \
    return startReplicaReduce<T>(r0, d0, root);                                \
  }                                                                            \
  void laminaMpiReplicaReduceWait_##suffix(int64_t handle, int64_t r1,         \
                                           void *d1, int64_t root,             \
                                           int64_t mean) {                     \
    waitReplicaReduce<T>(handle, r1, d1, root, mean);                          \
  }
LAMINA_MPI_DEFINE_REPLICAS(f32, F32)
LAMINA_MPI_DEFINE_REPLICAS(f64, F64)
LAMINA_MPI_DEFINE_REPLICAS(f16, F16)
LAMINA_MPI_DEFINE_REPLICAS(bf16, BF16)
#undef LAMINA_MPI_DEFINE_REPLICAS
}

llvm::ArrayRef<std::pair<const char *, void *>>
mlir::lamina::getMpiRuntimeSymbols() {
#define LAMINA_MPI_ENTRY(suffix)                                               \
  {"laminaMpiAllReduce_" #suffix,                                              \
   reinterpret_cast<void *>(&laminaMpiAllReduce_##suffix)},                    \
      {"laminaMpiAllReduceMax_" #suffix,                                       \
       reinterpret_cast<void *>(&laminaMpiAllReduceMax_##suffix)},             \
      {"laminaMpiAllGather_" #suffix,                                          \
       reinterpret_cast<void *>(&laminaMpiAllGather_##suffix)},                \
  {                                                                            \
    "laminaMpiReduceScatter_" #suffix,                                         \
        reinterpret_cast<void *>(&laminaMpiReduceScatter_##suffix)             \
  }
#define LAMINA_MPI_REPLICA_ENTRY(suffix)                                       \
  {"laminaMpiReplicaReduceStart_" #suffix,                                     \
   reinterpret_cast<void *>(&laminaMpiReplicaReduceStart_##suffix)},           \
  {                                                                            \
    "laminaMpiReplicaReduceWait_" #suffix,                                     \
        reinterpret_cast<void *>(&laminaMpiReplicaReduceWait_##suffix)         \
  }
  static const std::pair<const char *, void *> symbols[] = {
      {"laminaMpiAxisRank", reinterpret_cast<void *>(&laminaMpiAxisRank)},
      LAMINA_MPI_ENTRY(f32),
      LAMINA_MPI_ENTRY(f64),
      LAMINA_MPI_ENTRY(f16),
      LAMINA_MPI_ENTRY(bf16),
      LAMINA_MPI_ENTRY(i64),
      LAMINA_MPI_REPLICA_ENTRY(f32),
      LAMINA_MPI_REPLICA_ENTRY(f64),
      LAMINA_MPI_REPLICA_ENTRY(f16),
      LAMINA_MPI_REPLICA_ENTRY(bf16)};
#undef LAMINA_MPI_REPLICA_ENTRY
#undef LAMINA_MPI_ENTRY
  return symbols;
}

double mlir::lamina::getMpiCollectiveSeconds() { return collectiveSeconds; }

double mlir::lamina::getMpiReplicaWaitSeconds() { return replicaWaitSeconds; }

void mlir::lamina::mpiSendBytes(const void *data, int64_t bytes,
                                int64_t destination, int64_t tag) {
  callMpi("MPI_Send", [&] {
    return MPI_Send(data, int(bytes), MPI_BYTE, int(destination), int(tag),
                    communicator(MpiAxis::Pipeline));
  });
}

void mlir::lamina::mpiSendBytesDeferred(const void *data, int64_t bytes,
                                        int64_t destination, int64_t tag,
                                        std::shared_ptr<void> keepAlive) {
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Isend(data, int(bytes), MPI_BYTE, int(destination), int(tag),
                  communicator(MpiAxis::Pipeline), &request),
        "MPI_Isend");
  pendingRequests().addSend(request, std::move(keepAlive));
}

void mlir::lamina::mpiCompleteDeferredSends() {
  pendingRequests().completeSends();
}

void mlir::lamina::mpiRecvBytes(void *data, int64_t bytes, int64_t source,
                                int64_t tag) {
  callMpi("MPI_Recv", [&] {
    return MPI_Recv(data, int(bytes), MPI_BYTE, int(source), int(tag),
                    communicator(MpiAxis::Pipeline), MPI_STATUS_IGNORE);
  });
}

void mlir::lamina::mpiAxisBroadcast(void *data, int64_t bytes, int64_t root,
                                    MpiAxis axis) {
  callMpi("MPI_Bcast", [&] {
    return MPI_Bcast(data, int(bytes), MPI_BYTE, int(root),
                     communicator(axis));
  });
}

void mlir::lamina::mpiAxisReduce(double *data, int64_t count, MpiAxis axis,
                                 bool maximum) {
  callMpi("MPI_Allreduce", [&] {
    return MPI_Allreduce(MPI_IN_PLACE, data, int(count), MPI_DOUBLE,
                         maximum ? MPI_MAX : MPI_SUM, communicator(axis));
  });
}
