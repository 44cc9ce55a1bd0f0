// The CPU back end's persistent thread pool: generated kernels run over a
// one-dimensional grid, handed out in contiguous chunks to whichever thread
// is free.
#ifndef HETRT_CORE_THREADPOOL_H
#define HETRT_CORE_THREADPOOL_H

#include <atomic>
#include <memory>
#include <string>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace hetrt::core {

/// A task over [begin, end) of a grid, with its packed arguments.
using GridTask = void (*)(void *arguments, int64_t begin, int64_t end);

/// Threads are started once and wait between dispatches (spinning briefly
/// first, since a decode step dispatches dozens of kernels back to back). One
/// dispatch runs at a time; the calling thread claims chunks like the others,
/// and a dispatch is done when its chunks are, whether or not every worker
/// woke up for it: on a busy machine a descheduled worker costs a share of
/// the parallelism, never a scheduler time slice per dispatch.
class ThreadPool {
public:
  /// `numThreads` includes the calling thread; 0 means one per core.
  /// Throws std::system_error when the threads cannot be started.
  explicit ThreadPool(int numThreads);
  /// As the constructor, but returns null and sets `error` (naming the count
  /// and the fix) when the threads cannot be started; never throws.
  static std::unique_ptr<ThreadPool> create(int numThreads, std::string &error);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int numThreads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs `task` over [begin, end) and returns when all of it is done. The
  /// range is cut into a few chunks per thread, claimed in order from a shared
  /// counter: on a shared machine one core may run slower than another, and a
  /// fixed equal split would leave the faster one waiting.
  void parallelFor(GridTask task, void *arguments, int64_t begin, int64_t end);

  /// With `parallel` false, dispatches run on the calling thread alone (the
  /// workers stay asleep) until it is set again; the results are the same.
  void setParallel(bool parallel) {
    parallel_.store(parallel, std::memory_order_relaxed);
  }
  bool parallel() const { return parallel_.load(std::memory_order_relaxed); }

private:
  void work();
  /// Stops and joins every worker.
  void stop();
  /// Claims and runs chunks of dispatch `generation` until none is left.
  void runChunks(uint32_t generation);

  std::vector<std::thread> workers_;
  /// Pauses a waiting thread spins before it blocks (0 when the pool has
  /// more threads than the machine has cores). Set before any worker starts.
  int spinIterations_ = 0;
  /// Threads a dispatch is split for: the pool's size, or the machine's
  /// cores when the pool is larger.
  int maxActive_ = 1;
  std::mutex dispatchMutex_;
  std::mutex wakeMutex_;
  std::condition_variable wake_;
  /// A dispatch is published by bumping the generation; workers spin on it,
  /// then sleep on `wake_` (counted in `sleepers_`, so the caller only takes
  /// the mutex when someone sleeps).
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> parallel_{true};
  /// The claim word of the current dispatch: generation (24 bits), chunk
  /// count and next chunk (20 bits each). A claim is a compare-and-swap on
  /// it, so a worker that wakes late can never claim a chunk of a dispatch
  /// other than the one it saw, and nobody has to wait for late workers.
  std::atomic<uint64_t> cursor_{0};
  /// Chunks of the current dispatch not yet finished.
  std::atomic<int64_t> remaining_{0};
  // Parameters of the current dispatch: written before it is published and
  // read only after a successful claim, which keeps them stable until every
  // chunk is done.
  GridTask task_ = nullptr;
  void *arguments_ = nullptr;
  int64_t begin_ = 0;
  int64_t end_ = 0;
  int64_t chunk_ = 1;
};

/// The struct generated code receives as its runtime interface (layout fixed
/// by the compiler's hetc-x86-lower-dispatch pass).
struct CpuRuntimeInterface {
  void *pool;
  void (*parallelFor)(void *pool, GridTask task, void *arguments,
                      int64_t begin, int64_t end);
};

/// Wall time spent in each kernel's dispatches, for `hetc bench --profile`.
struct DispatchProfile {
  struct Entry {
    uint64_t dispatches = 0;
    double seconds = 0;
  };
  std::map<GridTask, Entry> byKernel;
  /// The pool the timed dispatches run on (set by makeRuntimeInterface).
  ThreadPool *pool = nullptr;
};

/// An interface whose dispatches run on `pool`; when `profile` is given (it
/// must outlive the interface and serve only this pool), each dispatch is
/// timed into it.
CpuRuntimeInterface makeRuntimeInterface(ThreadPool &pool,
                                         DispatchProfile *profile = nullptr);

} // namespace hetrt::core

#endif // HETRT_CORE_THREADPOOL_H
