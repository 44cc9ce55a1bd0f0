// A STREAM-like read kernel: each thread sums its contiguous part with eight
// independent accumulators, enough loads in flight to saturate DRAM.
#include "runtime/core/Bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace hetrt::core {

namespace {
struct ReadTask {
  const uint64_t *data;
  int64_t words;
  int64_t chunks;
  // One slot per chunk, so the sums are used and the reads not optimized away.
  std::vector<uint64_t> sums;
};

void readChunks(void *argument, int64_t begin, int64_t end) {
  auto *task = static_cast<ReadTask *>(argument);
  int64_t perChunk = task->words / task->chunks;
  for (int64_t chunk = begin; chunk < end; ++chunk) {
    const uint64_t *p = task->data + chunk * perChunk;
    uint64_t a[8] = {};
    for (int64_t i = 0; i + 8 <= perChunk; i += 8)
      for (int k = 0; k < 8; ++k)
        a[k] += p[i + k];
    task->sums[static_cast<size_t>(chunk)] =
        a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
  }
}
} // namespace

double measureReadBandwidth(ThreadPool &pool, size_t bytes, int repeats) {
  size_t words = bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[words]);
  for (size_t i = 0; i < words; ++i)
    buffer[i] = i;
  ReadTask task{buffer.get(), static_cast<int64_t>(words), pool.numThreads(),
                std::vector<uint64_t>(static_cast<size_t>(pool.numThreads()))};
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    pool.parallelFor(readChunks, &task, 0, task.chunks);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  volatile uint64_t sink = 0;
  for (uint64_t sum : task.sums)
    sink = sink + sum;
  (void)sink;
  return best;
}

} // namespace hetrt::core
