// The CPU back end's buffer cache and thread pool, and the limits sizes are
// checked against before allocation.
#include "runtime/backends/cpu/BufferCache.h"
#include "runtime/core/Limits.h"
#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <thread>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace hetrt;

TEST(BufferCache, BuffersAreAlignedAndWritable) {
  cpu::trimBufferCache();
  for (uint64_t size : {1u, 63u, 64u, 4097u, 100000u}) {
    void *buffer = cpu::allocateBuffer(size, 64);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 64, 0u) << size;
    std::memset(buffer, 0xab, size);
    cpu::releaseBuffer(buffer);
  }
  void *wide = cpu::allocateBuffer(1000, 4096);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(wide) % 4096, 0u);
  std::memset(wide, 1, 1000);
  cpu::releaseBuffer(wide);
  cpu::releaseBuffer(nullptr);
  cpu::trimBufferCache();
}

TEST(BufferCache, ReleasedBufferIsReusedForTheSameSizeClass) {
  cpu::trimBufferCache();
  void *first = cpu::allocateBuffer(1 << 20, 64);
  cpu::releaseBuffer(first);
  EXPECT_GE(cpu::cachedBufferBytes(), size_t(1) << 20);
  // Slightly smaller, same class: the cached buffer comes back.
  void *second = cpu::allocateBuffer((1 << 20) - 100, 64);
  EXPECT_EQ(second, first);
  EXPECT_EQ(cpu::cachedBufferBytes(), 0u);
  // A different class needs a new buffer.
  void *other = cpu::allocateBuffer(3 << 20, 64);
  EXPECT_NE(other, first);
  cpu::releaseBuffer(second);
  cpu::releaseBuffer(other);
  EXPECT_GE(cpu::trimBufferCache(), size_t(4) << 20);
  EXPECT_EQ(cpu::cachedBufferBytes(), 0u);
}

// Every size class keeps its own buffers: a released buffer comes back for a
// size of its class and never for one just past it (which it could not
// hold). Classes are 64-byte steps up to 256 bytes, then four per power of
// two.
TEST(BufferCache, SizeClassesNeverShareBuffers) {
  cpu::trimBufferCache();
  auto classBytes = [](uint64_t size) -> uint64_t {
    if (size <= 256)
      return (size + 63) / 64 * 64;
    uint64_t step = uint64_t(1) << (63 - __builtin_clzll(size - 1) - 2);
    return (size + step - 1) / step * step;
  };
  for (uint64_t size = 1; size < (uint64_t(8) << 20); size = size * 5 / 4 + 1) {
    void *buffer = cpu::allocateBuffer(size, 64);
    ASSERT_NE(buffer, nullptr) << size;
    std::memset(buffer, 0x5a, size);
    cpu::releaseBuffer(buffer);
    void *again = cpu::allocateBuffer(classBytes(size), 64);
    EXPECT_EQ(again, buffer) << size;
    uint64_t next = classBytes(size) + 1;
    void *larger = cpu::allocateBuffer(next, 64);
    EXPECT_NE(larger, buffer) << size << " then " << next;
    std::memset(larger, 0xa5, next);
    cpu::releaseBuffer(larger);
    cpu::releaseBuffer(again);
  }
  cpu::trimBufferCache();
}

long pageFaults() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

// Decode steps ask for buffers that grow with the context: new small size
// classes must not fault fresh pages in as they are first written.
TEST(BufferCache, GrowingSmallBuffersTouchNoFreshPages) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer buffers come from the heap";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "under AddressSanitizer buffers come from the heap";
#endif
#endif
  cpu::trimBufferCache();
  std::vector<void *> buffers = {cpu::allocateBuffer(64, 64)};
  buffers.reserve(64);
  long before = pageFaults();
  long freshPages = 0;
  for (uint64_t size = 1024; size <= 48 * 1024; size += 1024) {
    void *buffer = cpu::allocateBuffer(size, 64);
    ASSERT_NE(buffer, nullptr);
    std::memset(buffer, 0x5a, size);
    buffers.push_back(buffer);
    freshPages += static_cast<long>((size + 4095) / 4096);
  }
  // Fresh pages would fault about 300 times; the kernel may still fault the
  // process a few times on its own (page migration, reclaim under load).
  EXPECT_LT(pageFaults() - before, freshPages / 32);
  for (void *buffer : buffers)
    cpu::releaseBuffer(buffer);
  cpu::trimBufferCache();
}

// A trim while slab buffers are out leaves them usable, and they can still be
// released and handed out again.
TEST(BufferCache, TrimKeepsBuffersThatAreOut) {
  cpu::trimBufferCache();
  void *out = cpu::allocateBuffer(4096, 64);
  ASSERT_NE(out, nullptr);
  void *cached = cpu::allocateBuffer(8192, 64);
  cpu::releaseBuffer(cached);
  EXPECT_GE(cpu::trimBufferCache(), 8192u);
  std::memset(out, 1, 4096);
  cpu::releaseBuffer(out);
  EXPECT_EQ(cpu::allocateBuffer(4000, 64), out);
  cpu::releaseBuffer(out);
  cpu::trimBufferCache();
  EXPECT_EQ(cpu::cachedBufferBytes(), 0u);
}

void addRange(void *arguments, int64_t begin, int64_t end) {
  auto *hits = static_cast<std::vector<std::atomic<int>> *>(arguments);
  for (int64_t i = begin; i < end; ++i)
    (*hits)[i].fetch_add(1);
}

TEST(ThreadPool, EveryGridIndexRunsExactlyOnce) {
  core::ThreadPool pool(3);
  for (int64_t size : {1, 2, 5, 96, 1000, 4001}) {
    std::vector<std::atomic<int>> hits(size + 10);
    for (auto &hit : hits)
      hit = 0;
    pool.parallelFor(&addRange, &hits, 10, size + 10);
    for (int64_t i = 0; i < size + 10; ++i)
      ASSERT_EQ(hits[i].load(), i < 10 ? 0 : 1) << "size " << size << " index " << i;
  }
}

struct CallerRecord {
  std::thread::id caller;
  std::atomic<int> calls{0};
  std::atomic<int> onOtherThreads{0};
};

void recordCaller(void *arguments, int64_t, int64_t) {
  auto *record = static_cast<CallerRecord *>(arguments);
  record->calls.fetch_add(1);
  if (std::this_thread::get_id() != record->caller)
    record->onOtherThreads.fetch_add(1);
}

// Serial mode (the session's choice for decode steps too small to share)
// runs a whole dispatch on the calling thread, in one call; switching back
// shares the work again.
TEST(ThreadPool, SerialModeRunsOnTheCallingThreadAndCanBeUndone) {
  core::ThreadPool pool(3);
  pool.setParallel(false);
  EXPECT_FALSE(pool.parallel());
  CallerRecord record;
  record.caller = std::this_thread::get_id();
  pool.parallelFor(&recordCaller, &record, 0, 4000);
  EXPECT_EQ(record.calls.load(), 1);
  EXPECT_EQ(record.onOtherThreads.load(), 0);

  pool.setParallel(true);
  std::vector<std::atomic<int>> hits(4000);
  for (auto &hit : hits)
    hit = 0;
  pool.parallelFor(&addRange, &hits, 0, 4000);
  for (int64_t i = 0; i < 4000; ++i)
    ASSERT_EQ(hits[i].load(), 1) << "index " << i;
  CallerRecord shared;
  shared.caller = std::this_thread::get_id();
  pool.parallelFor(&recordCaller, &shared, 0, 4000);
  EXPECT_GT(shared.calls.load(), 1);
}

void addIndices(void *arguments, int64_t begin, int64_t end) {
  auto *sum = static_cast<std::atomic<int64_t> *>(arguments);
  int64_t local = 0;
  for (int64_t i = begin; i < end; ++i)
    local += i;
  sum->fetch_add(local);
}

// Back-to-back dispatches of changing sizes: a worker that wakes late must
// never run a chunk of the wrong dispatch or run one twice, and a dispatch
// must not return before its last chunk is done.
TEST(ThreadPool, BackToBackDispatchesStayExact) {
  for (int threads : {2, 3, 5}) {
    core::ThreadPool pool(threads);
    for (int64_t round = 0; round < 3000; ++round) {
      int64_t size = 1 + (round * 37) % 97;
      std::atomic<int64_t> sum{0};
      pool.parallelFor(&addIndices, &sum, round, round + size);
      ASSERT_EQ(sum.load(), size * round + size * (size - 1) / 2)
          << "threads " << threads << " round " << round;
    }
  }
}

} // namespace

TEST(Limits, ProductsThatOverflowAreRefused) {
  EXPECT_EQ(hetrt::core::checkedProduct({2, 3, 7}), std::optional<uint64_t>(42));
  EXPECT_FALSE(hetrt::core::checkedProduct({int64_t(1) << 32, int64_t(1) << 32}));
  EXPECT_FALSE(hetrt::core::checkedProduct({-1, 4}));
  EXPECT_FALSE(hetrt::core::kvCacheBytes(4096, int64_t(1) << 40, 4096, 65536, 4));
  EXPECT_EQ(hetrt::core::kvCacheBytes(5, 512, 4, 8, 4),
            std::optional<uint64_t>(5 * 2 * 512 * 4 * 8 * 4));
}

TEST(Limits, KvCacheLargerThanMemoryIsAnErrorNamingItsSize) {
  std::string error;
  EXPECT_TRUE(hetrt::core::checkKvCacheFits(5, 512, 4, 8, 4, "m.hetpack", "fix",
                                            error));
  EXPECT_FALSE(hetrt::core::checkKvCacheFits(80, int64_t(1) << 30, 8, 128, 4,
                                             "m.hetpack", "give less", error));
  EXPECT_NE(error.find("m.hetpack: a KV cache for a context of 1073741824 "
                       "positions needs 640.00 TiB"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("; give less"), std::string::npos) << error;
}

TEST(Limits, ThreadCountsAreBounded) {
  std::string error;
  EXPECT_TRUE(hetrt::core::checkThreadCount(0, "--threads", error));
  EXPECT_TRUE(hetrt::core::checkThreadCount(hetrt::core::kMaxThreads, "--threads",
                                            error));
  EXPECT_FALSE(hetrt::core::checkThreadCount(1000000, "--threads", error));
  EXPECT_NE(error.find("--threads 1000000 is outside [0, 1024]"),
            std::string::npos)
      << error;
  EXPECT_FALSE(hetrt::core::checkThreadCount(-1, "--threads", error));
}
