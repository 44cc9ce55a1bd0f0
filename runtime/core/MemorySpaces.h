// The memory a session holds, space by space: every buffer has a home, one
// memory of one device (a GPU's VRAM, the CPU's DRAM), and the KV cache's
// cold blocks live in host memory or in a file on disk. Device buffers are
// allocated through the manager, which charges each to its space and role
// until its last owner drops it, and refuses an allocation that would take
// a space past its budget: the memory the plan gave the device (what
// `--device-memory` caps), so a session never holds more than the plan
// promised. Copies between spaces (streamed weights, KV blocks moved out
// and back) are counted as migrations, with the time work waited for them.
#ifndef HETRT_CORE_MEMORYSPACES_H
#define HETRT_CORE_MEMORYSPACES_H

#include "runtime/hal/Device.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::core {

/// What a space's bytes hold.
enum class MemoryRole : int {
  Weights,
  KvCache,
  /// Buffers streamed weights land in.
  StreamBuffers,
  /// Activations, logits, tables, parameters.
  Work,
  /// KV blocks moved out of the pool (host memory or disk).
  KvTier,
};
inline constexpr size_t kMemoryRoles = 5;

struct MemorySpaceStats {
  /// "vulkan0.device-local", "cpu0.host", "disk".
  std::string name;
  /// The device whose memory it is ("" for disk).
  std::string device;
  /// Bytes the space holds in all (0: unknown).
  uint64_t capacityBytes = 0;
  /// Bytes the session may hold there (0: no budget but the capacity), and
  /// what set it.
  uint64_t budgetBytes = 0;
  std::string budgetSource;
  std::array<uint64_t, kMemoryRoles> heldBytes{};
  /// The most held at once.
  uint64_t peakBytes = 0;
  /// Copies into and out of the space, and their bytes.
  uint64_t migrationsIn = 0, migrationsOut = 0;
  uint64_t bytesIn = 0, bytesOut = 0;
  /// How long work in the space waited for copies into it: the part of the
  /// copying not hidden behind computing.
  uint64_t waitNanoseconds = 0;

  uint64_t held() const {
    uint64_t total = 0;
    for (uint64_t bytes : heldBytes)
      total += bytes;
    return total;
  }
  uint64_t held(MemoryRole role) const {
    return heldBytes[static_cast<size_t>(role)];
  }
};

/// Thread-safe: buffers may be dropped on any thread.
class MemoryManager {
public:
  MemoryManager();

  /// The space of memory `memory` of `device` ("<device>.<memory>"), added
  /// on first use.
  size_t spaceOf(const hal::Device &device, int memory);
  /// A space no device owns, such as "disk", added on first use.
  size_t namedSpace(const std::string &name, uint64_t capacityBytes = 0);
  /// Bounds what `space` may hold from now on, saying what set the bound
  /// ("the plan for SYSTEM"); refused when the space holds more already.
  bool setBudget(size_t space, uint64_t bytes, const std::string &source,
                 hal::Error &error);
  /// A buffer of `bytes` in memory `memory` of `device`, charged to `role`
  /// in its space until the last owner drops it. Refused past the space's
  /// budget, with `what` (the buffer, in words), the space, the bytes held
  /// and the budget.
  std::shared_ptr<hal::Buffer> allocate(hal::Device &device, int memory,
                                        uint64_t bytes, MemoryRole role,
                                        const std::string &what,
                                        hal::Error &error);
  /// `count` copies of `bytes` in all from space `from` to space `to`;
  /// `waitNanoseconds` of `to`'s work waited for them.
  void recordMigration(size_t from, size_t to, uint64_t count, uint64_t bytes,
                       uint64_t waitNanoseconds = 0);
  std::vector<MemorySpaceStats> stats() const;

private:
  struct State;
  std::shared_ptr<State> state_;
};

} // namespace hetrt::core

#endif // HETRT_CORE_MEMORYSPACES_H
