// The CPU back end's persistent thread pool: generated kernels run over a
// one-dimensional grid, handed out in contiguous chunks to whichever thread
// is free.
#ifndef HETRT_CORE_THREADPOOL_H
#define HETRT_CORE_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace hetrt::core {

/// A task over [begin, end) of a grid, with its packed arguments.
using GridTask = void (*)(void *arguments, int64_t begin, int64_t end);

/// Threads are started once and wait between dispatches (spinning briefly
/// first, since a decode step dispatches dozens of kernels back to back). One
/// dispatch runs at a time; the calling thread works on the first range.
class ThreadPool {
public:
  /// `numThreads` includes the calling thread; 0 means one per core.
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int numThreads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs `task` over [begin, end) and returns when all of it is done. The
  /// range is cut into a few chunks per thread, claimed in order from a shared
  /// counter: on a shared machine one core may run slower than another, and a
  /// fixed equal split would leave the faster one waiting.
  void parallelFor(GridTask task, void *arguments, int64_t begin, int64_t end);

private:
  void work(int index);
  /// Claims and runs chunks of the current dispatch until none is left.
  void runChunks();

  std::vector<std::thread> workers_;
  std::mutex dispatchMutex_;
  std::mutex wakeMutex_;
  std::condition_variable wake_;
  // A dispatch is published by bumping the generation.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
  GridTask task_ = nullptr;
  void *arguments_ = nullptr;
  int64_t begin_ = 0;
  int64_t end_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
  int activeThreads_ = 0;
};

/// The struct generated code receives as its runtime interface (layout fixed
/// by the compiler's hetc-x86-lower-dispatch pass).
struct CpuRuntimeInterface {
  void *pool;
  void (*parallelFor)(void *pool, GridTask task, void *arguments,
                      int64_t begin, int64_t end);
};

/// An interface whose dispatches run on `pool`.
CpuRuntimeInterface makeRuntimeInterface(ThreadPool &pool);

} // namespace hetrt::core

#endif // HETRT_CORE_THREADPOOL_H
