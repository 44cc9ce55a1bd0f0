// The allocator generated code uses for its intermediate buffers: freed
// buffers are kept by size class and handed out again, since every prefill
// and decode step allocates the same buffers and fresh pages would be faulted
// in and zeroed by the kernel on every step.
#ifndef HETRT_BACKENDS_CPU_BUFFERCACHE_H
#define HETRT_BACKENDS_CPU_BUFFERCACHE_H

#include <cstddef>
#include <cstdint>

namespace hetrt::cpu {

/// A buffer of at least `size` bytes aligned to `alignment` (a power of two),
/// or null when memory is exhausted. Thread-safe.
void *allocateBuffer(uint64_t size, uint64_t alignment);
/// Returns a buffer of allocateBuffer to the cache (null is ignored).
void releaseBuffer(void *buffer);
/// Frees every cached buffer; returns the bytes released.
size_t trimBufferCache();
/// Bytes currently held in the cache.
size_t cachedBufferBytes();

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_BUFFERCACHE_H
