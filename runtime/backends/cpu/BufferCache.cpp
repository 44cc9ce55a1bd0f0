// Size-class cache of generated code's buffers (see BufferCache.h).
#include "runtime/backends/cpu/BufferCache.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace hetrt::cpu {

namespace {

/// Bytes in front of each payload: the header and the payload's alignment.
constexpr uint64_t kHeaderBytes = 64;
/// Beyond this many cached bytes, released buffers go back to the system.
constexpr size_t kCacheLimitBytes = size_t(1) << 30;

/// Small buffers are carved from slabs whose pages are populated when the
/// slab is mapped. A decode step's attention buffers grow with the context,
/// so a new size class is needed every few steps, and fresh heap pages
/// would each fault on first touch: in a sandboxed kernel that is tens of
/// microseconds a page, more than a whole step of a small model.
/// Under AddressSanitizer every buffer comes from the heap instead, so
/// overruns of generated code stay visible.
constexpr uint64_t kSlabBytes = uint64_t(4) << 20;
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kLargestSlabbed = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr uint64_t kLargestSlabbed = 0;
#else
constexpr uint64_t kLargestSlabbed = uint64_t(256) << 10;
#endif
#else
constexpr uint64_t kLargestSlabbed = uint64_t(256) << 10;
#endif

struct Header {
  uint64_t classBytes;
  /// From the start of the system allocation to the payload; 0 for a slab's.
  uint64_t offset;
};

/// Sizes round up to one of four steps per power of two (at most 25 % slack),
/// so prefills of different lengths, and decode steps at growing contexts,
/// share buffers.
uint64_t sizeClass(uint64_t size) {
  if (size <= 256)
    return (size + 63) & ~uint64_t(63);
  int log = 63 - __builtin_clzll(size - 1);
  uint64_t step = uint64_t(1) << (log - 2);
  return (size + step - 1) & ~(step - 1);
}

/// The position of a size class among all of them: 64-byte steps up to 256
/// bytes (0–3), then four per power of two (m · 2^(log-2), m = 5..8, for
/// sizes in (2^log, 2^(log+1)]). A decode step allocates and releases a few
/// hundred buffers: an array lookup where a hash map cost about 3 % of a
/// small model's decode time.
size_t classIndex(uint64_t classBytes) {
  if (classBytes <= 256)
    return classBytes / 64 - 1;
  int log = 63 - __builtin_clzll(classBytes - 1);
  uint64_t multiple = classBytes >> (log - 2);
  return 4 + static_cast<size_t>(log - 8) * 4 + (multiple - 5);
}
constexpr size_t kClassCount = 4 + (64 - 8) * 4;
constexpr uintptr_t kSlabTag = 1;

struct Cache {
  std::mutex mutex;
  /// Free buffers per size class (classIndex), a slab's with the lowest bit
  /// of the pointer set (payloads are 64-byte aligned): handing a buffer out
  /// then reads no header, whose line the weights streamed through the
  /// caches since have evicted (that miss was half of the allocation's
  /// time).
  std::vector<uintptr_t> free[kClassCount];
  size_t cachedBytes = 0;
  std::vector<void *> slabs;
  char *slabNext = nullptr;
  uint64_t slabLeft = 0;
  /// Slab buffers handed out and not released: slabs are unmapped by a trim
  /// only when none is.
  size_t slabBuffersOut = 0;
};

/// A payload of `classBytes` from the current slab (a new one when it is
/// used up), or null. Called with the cache locked.
void *carveFromSlab(Cache &c, uint64_t classBytes) {
  uint64_t needed = classBytes + kHeaderBytes;
  if (c.slabLeft < needed) {
    void *slab = mmap(nullptr, kSlabBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (slab == MAP_FAILED)
      return nullptr;
    c.slabs.push_back(slab);
    c.slabNext = static_cast<char *>(slab);
    c.slabLeft = kSlabBytes;
  }
  void *payload = c.slabNext + kHeaderBytes;
  c.slabNext += needed;
  c.slabLeft -= needed;
  ++c.slabBuffersOut;
  return payload;
}

/// Never destroyed: generated code may release buffers during static
/// destruction of other objects.
Cache &cache() {
  static Cache *instance = new Cache;
  return *instance;
}

Header *headerOf(void *payload) {
  return reinterpret_cast<Header *>(static_cast<char *>(payload) -
                                    sizeof(Header));
}

} // namespace

void *allocateBuffer(uint64_t size, uint64_t alignment) {
  if (alignment > kHeaderBytes) {
    // Rare: not cached, with room for the header before the aligned payload.
    uint64_t total = ((size + alignment - 1) & ~(alignment - 1)) + alignment;
    void *base = std::aligned_alloc(alignment, total);
    if (!base)
      return nullptr;
    void *payload = static_cast<char *>(base) + alignment;
    *headerOf(payload) = {0, alignment};
    return payload;
  }
  uint64_t classBytes = sizeClass(size == 0 ? 1 : size);
  {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    std::vector<uintptr_t> &buffers = c.free[classIndex(classBytes)];
    if (!buffers.empty()) {
      uintptr_t entry = buffers.back();
      buffers.pop_back();
      c.cachedBytes -= classBytes;
      if (entry & kSlabTag)
        ++c.slabBuffersOut;
      return reinterpret_cast<void *>(entry & ~kSlabTag);
    }
    if (classBytes + kHeaderBytes <= kLargestSlabbed)
      if (void *payload = carveFromSlab(c, classBytes)) {
        *headerOf(payload) = {classBytes, 0};
        return payload;
      }
  }
  void *base = std::aligned_alloc(kHeaderBytes, classBytes + kHeaderBytes);
  if (!base)
    return nullptr;
  void *payload = static_cast<char *>(base) + kHeaderBytes;
  *headerOf(payload) = {classBytes, kHeaderBytes};
  return payload;
}

void releaseBuffer(void *buffer) {
  if (!buffer)
    return;
  Header header = *headerOf(buffer);
  void *base = static_cast<char *>(buffer) - header.offset;
  if (header.offset == 0) {
    // A slab's buffer is always kept: it cannot go back on its own.
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.free[classIndex(header.classBytes)].push_back(
        reinterpret_cast<uintptr_t>(buffer) | kSlabTag);
    c.cachedBytes += header.classBytes;
    --c.slabBuffersOut;
    return;
  }
  if (header.classBytes != 0) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cachedBytes + header.classBytes <= kCacheLimitBytes) {
      c.free[classIndex(header.classBytes)].push_back(
          reinterpret_cast<uintptr_t>(buffer));
      c.cachedBytes += header.classBytes;
      return;
    }
  }
  std::free(base);
}

size_t trimBufferCache() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t released = c.cachedBytes;
  for (std::vector<uintptr_t> &buffers : c.free) {
    for (uintptr_t entry : buffers)
      if (!(entry & kSlabTag)) {
        void *buffer = reinterpret_cast<void *>(entry);
        std::free(static_cast<char *>(buffer) - headerOf(buffer)->offset);
      }
    buffers.clear();
  }
  c.cachedBytes = 0;
  // Slab buffers still out keep their slabs mapped; the free space of those
  // slabs is forgotten until they are all back.
  if (c.slabBuffersOut == 0) {
    for (void *slab : c.slabs)
      munmap(slab, kSlabBytes);
    c.slabs.clear();
    c.slabNext = nullptr;
    c.slabLeft = 0;
  }
  return released;
}

size_t cachedBufferBytes() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.cachedBytes;
}

} // namespace hetrt::cpu
