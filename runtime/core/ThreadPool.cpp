// Thread pool dispatch: generation counter + spin-then-block wake-up, chunks
// claimed by compare-and-swap on a word tagged with the dispatch, and a
// countdown of finished chunks for completion.
#include "runtime/core/ThreadPool.h"

#include <new>
#include <system_error>

#include <algorithm>
#include <chrono>

namespace hetrt::core {

namespace {
/// Spin iterations before a waiting thread blocks; long enough to bridge the
/// gap between consecutive kernels of one decode step.
constexpr int kSpinIterations = 20000;

/// Chunks per thread: enough for a slower thread to hand work to a faster
/// one, few enough that claiming stays negligible next to a chunk's work.
constexpr int64_t kChunksPerThread = 2;

inline void cpuRelax() { __builtin_ia32_pause(); }


constexpr int kGenerationBits = 24;
constexpr int kChunkBits = 20;
constexpr uint64_t kChunkMask = (uint64_t(1) << kChunkBits) - 1;
constexpr uint32_t kGenerationMask = (uint32_t(1) << kGenerationBits) - 1;

uint64_t claimWord(uint32_t generation, uint64_t chunks, uint64_t next) {
  return (uint64_t(generation) << (2 * kChunkBits)) | (chunks << kChunkBits) |
         next;
}
uint32_t generationOf(uint64_t word) {
  return static_cast<uint32_t>(word >> (2 * kChunkBits));
}
uint64_t chunksOf(uint64_t word) { return (word >> kChunkBits) & kChunkMask; }
uint64_t nextOf(uint64_t word) { return word & kChunkMask; }
} // namespace

ThreadPool::ThreadPool(int numThreads) {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (numThreads <= 0)
    numThreads = cores;
  // More threads than cores: a spinning thread holds the core a thread with
  // work is waiting for (1024 threads on 2 cores took 90 s for four tokens),
  // so waiters block at once.
  spinIterations_ = numThreads <= cores ? kSpinIterations : 0;
  // Nor can more threads than cores work at once: a dispatch is split for
  // at most that many, so it wakes a few workers, not the whole pool.
  maxActive_ = std::min(numThreads, cores);
  try {
    for (int i = 1; i < numThreads; ++i)
      workers_.emplace_back([this] { work(); });
  } catch (...) {
    // The destructor does not run for a constructor that throws: the workers
    // already started must be stopped here, or their std::thread objects
    // would terminate the process.
    stop();
    throw;
  }
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() { stop(); }

std::unique_ptr<ThreadPool> ThreadPool::create(int numThreads,
                                               std::string &error) {
  try {
    return std::make_unique<ThreadPool>(numThreads);
  } catch (const std::system_error &failure) {
    error = "cannot start " + std::to_string(numThreads) + " threads (" +
            failure.what() + "); give fewer with --threads";
  } catch (const std::bad_alloc &) {
    error = "out of memory starting " + std::to_string(numThreads) +
            " threads; give fewer with --threads";
  }
  return nullptr;
}

void ThreadPool::parallelFor(GridTask task, void *arguments, int64_t begin,
                             int64_t end) {
  int64_t size = end - begin;
  if (size <= 0)
    return;
  int threads = static_cast<int>(
      std::min<int64_t>(std::min(numThreads(), maxActive_), size));
  if (threads == 1 || !parallel_.load(std::memory_order_relaxed)) {
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
  int64_t chunks = (size + chunk_ - 1) / chunk_;
  remaining_.store(chunks, std::memory_order_relaxed);
  uint32_t generation =
      (generation_.load(std::memory_order_relaxed) + 1) & kGenerationMask;
  cursor_.store(claimWord(generation, static_cast<uint64_t>(chunks), 0),
                std::memory_order_release);
  generation_.store(generation, std::memory_order_seq_cst);
  if (int sleepers = sleepers_.load(std::memory_order_seq_cst); sleepers > 0) {
    // Taking the mutex orders this notify after a sleeper's predicate check.
    { std::lock_guard<std::mutex> lock(wakeMutex_); }
    // Wake only as many workers as there are chunks for besides this thread.
    if (chunks - 1 >= sleepers)
      wake_.notify_all();
    else
      for (int64_t i = 0; i < chunks - 1; ++i)
        wake_.notify_one();
  }
  runChunks(generation);
  // What is left runs on workers that claimed it: spin while they are likely
  // still working, then yield, since a worker may have been descheduled.
  for (int spin = 0; remaining_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < spinIterations_)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::work() {
  // Starting from 0 rather than the current generation: a worker that starts
  // late (even after the pool began stopping) looks at least once.
  uint32_t seen = 0;
  while (true) {
    uint32_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < spinIterations_; ++spin) {
      cpuRelax();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      std::unique_lock<std::mutex> lock(wakeMutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] {
        return generation_.load(std::memory_order_seq_cst) != seen ||
               stopping_.load();
      });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stopping_)
      return;
    runChunks(current);
  }
}

void ThreadPool::runChunks(uint32_t generation) {
  while (true) {
    uint64_t word = cursor_.load(std::memory_order_acquire);
    do {
      if (generationOf(word) != generation || nextOf(word) >= chunksOf(word))
        return;
    } while (!cursor_.compare_exchange_weak(word, word + 1,
                                            std::memory_order_acq_rel,
                                            std::memory_order_acquire));
    int64_t first = begin_ + static_cast<int64_t>(nextOf(word)) * chunk_;
    task_(arguments_, first, std::min(end_, first + chunk_));
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

CpuRuntimeInterface makeRuntimeInterface(ThreadPool &pool,
                                         DispatchProfile *profile) {
  if (!profile)
    return {&pool, [](void *poolPointer, GridTask task, void *arguments,
                      int64_t begin, int64_t end) {
              static_cast<ThreadPool *>(poolPointer)
                  ->parallelFor(task, arguments, begin, end);
            }};
  // The interface has room for one pointer: the profile carries the pool.
  profile->pool = &pool;
  return {profile, [](void *profilePointer, GridTask task, void *arguments,
                      int64_t begin, int64_t end) {
            auto *profile = static_cast<DispatchProfile *>(profilePointer);
            auto start = std::chrono::steady_clock::now();
            profile->pool->parallelFor(task, arguments, begin, end);
            DispatchProfile::Entry &entry = profile->byKernel[task];
            ++entry.dispatches;
            entry.seconds += std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
          }};
}

} // namespace hetrt::core
