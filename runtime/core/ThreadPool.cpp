// Thread pool dispatch: generation counter + spin-then-block wake-up, chunks
// claimed from an atomic cursor, and an atomic countdown for completion.
#include "runtime/core/ThreadPool.h"

#include <algorithm>

namespace hetrt::core {

namespace {
/// Spin iterations before a waiting thread blocks; long enough to bridge the
/// gap between consecutive kernels of one decode step.
constexpr int kSpinIterations = 20000;

/// Chunks per thread: enough for a slower thread to hand work to a faster
/// one, few enough that claiming stays negligible next to a chunk's work.
constexpr int64_t kChunksPerThread = 2;

inline void cpuRelax() { __builtin_ia32_pause(); }
} // namespace

ThreadPool::ThreadPool(int numThreads) {
  if (numThreads <= 0)
    numThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < numThreads; ++i)
    workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::parallelFor(GridTask task, void *arguments, int64_t begin,
                             int64_t end) {
  int64_t size = end - begin;
  if (size <= 0)
    return;
  int threads = static_cast<int>(std::min<int64_t>(numThreads(), size));
  if (threads == 1) {
    task(arguments, begin, end);
    return;
  }
  std::lock_guard<std::mutex> dispatch(dispatchMutex_);
  task_ = task;
  arguments_ = arguments;
  begin_ = begin;
  end_ = end;
  chunk_ = std::max<int64_t>(1, (size + threads * kChunksPerThread - 1) /
                                    (threads * kChunksPerThread));
  next_.store(begin, std::memory_order_relaxed);
  activeThreads_ = threads;
  // Every worker acknowledges every dispatch, active or not, so no worker can
  // still be reading this dispatch's parameters when the next one is written.
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  runChunks();
  // Spin while the others are likely still working, then yield: on a busy
  // machine a worker may be descheduled, and spinning would only delay it.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  while (true) {
    uint64_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
      cpuRelax();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      std::unique_lock<std::mutex> lock(wakeMutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stopping_)
      return;
    if (index < activeThreads_)
      runChunks();
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::runChunks() {
  while (true) {
    int64_t first = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (first >= end_)
      return;
    task_(arguments_, first, std::min(end_, first + chunk_));
  }
}

CpuRuntimeInterface makeRuntimeInterface(ThreadPool &pool) {
  return {&pool, [](void *poolPointer, GridTask task, void *arguments,
                    int64_t begin, int64_t end) {
            static_cast<ThreadPool *>(poolPointer)->parallelFor(task, arguments,
                                                                begin, end);
          }};
}

} // namespace hetrt::core
