// The limits that sizes from untrusted input (a pack's manifest, a model's
// hyper-parameters, flags) are checked against before anything is allocated:
// the memory this process may use, a thread count, the KV cache's bytes.
#ifndef HETRT_CORE_LIMITS_H
#define HETRT_CORE_LIMITS_H

#include <cstdint>
#include <optional>
#include <string>

namespace hetrt::core {

/// The most threads a session starts: beyond this a thread pool only costs
/// memory and scheduling, whatever the machine.
inline constexpr int64_t kMaxThreads = 1024;

/// Bytes this process can still allocate: the kernel's MemAvailable, capped
/// by the cgroup's memory.max less its memory.current where one is set, and
/// by the address-space limit (ulimit -v) less what is already mapped.
uint64_t availableMemoryBytes();

/// "1.50 GiB", "12.0 MiB", "512 bytes": sizes for messages.
std::string formatBytes(uint64_t bytes);

/// `a * b * ...` of non-negative factors, or nullopt on overflow past
/// 2^63 (sizes from a file are products of its fields).
std::optional<uint64_t> checkedProduct(std::initializer_list<int64_t> factors);

/// Checks a thread count given as `flag` (0 means one per core). The error
/// names the flag, the value, the limit and the fix.
bool checkThreadCount(int64_t threads, const std::string &flag,
                      std::string &error);

/// The bytes of a session's KV cache: layers × 2 (K and V) × context ×
/// KV heads × head size × element bytes; nullopt on overflow.
std::optional<uint64_t> kvCacheBytes(int64_t layers, int64_t context,
                                     int64_t kvHeads, int64_t headDim,
                                     int64_t elementBytes);

/// Checks that a KV cache for `context` positions fits the memory this
/// process can allocate. The error starts with `origin` and names the
/// context, the bytes, the memory available and `fix`.
bool checkKvCacheFits(int64_t layers, int64_t context, int64_t kvHeads,
                      int64_t headDim, int64_t elementBytes,
                      const std::string &origin, const std::string &fix,
                      std::string &error);

} // namespace hetrt::core

#endif // HETRT_CORE_LIMITS_H
