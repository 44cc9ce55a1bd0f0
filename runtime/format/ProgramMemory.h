// What the runtime holds in each device's memory to play a set of programs
// (abi/Program.h), counted by the runner's own rules, so the compiler can
// check a plan's memory before the pack is written and the runtime can
// check its budgets before it allocates: the same bytes on both sides.
#ifndef HETRT_FORMAT_PROGRAMMEMORY_H
#define HETRT_FORMAT_PROGRAMMEMORY_H

#include "abi/Program.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hetrt::format {

/// Bytes held in one device's memory, by what they hold.
struct DeviceHeldBytes {
  /// The program device's name ("vulkan0"; empty in a one-device program).
  std::string device;
  uint64_t weightBytes = 0;
  uint64_t kvCacheBytes = 0;
  uint64_t streamBufferBytes = 0;
  /// Activations, logits, positions, tables and the kernel library's
  /// parameter buffers: what the programs compute with.
  uint64_t workBytes = 0;
  uint64_t total() const {
    return weightBytes + kvCacheBytes + streamBufferBytes + workBytes;
  }
};

/// Bytes a buffer of `bytes` takes (the runner rounds to whole words).
inline uint64_t heldBufferBytes(int64_t bytes) {
  return bytes < 4 ? 4 : (static_cast<uint64_t>(bytes) + 3) / 4 * 4;
}

/// Whether a device running `target` reads weights where the host maps
/// them instead of holding a copy (a CPU).
inline bool readsWeightsInPlace(const std::string &target) {
  return target == "x86" || target == "host-memory";
}

/// Per device named by the programs (in order of first appearance), the
/// bytes a runner playing `programs` (each with the most tokens one step of
/// it takes) holds: weights, caches and stream buffers once per name and
/// device (shared by the programs), every other buffer per program, and a
/// parameter buffer per dispatch of the kernel library. Weights a CPU reads
/// in place and the mapped model file are not held. Sizes must be valid
/// (the runner refuses them otherwise).
std::vector<DeviceHeldBytes> programHeldBytes(
    const std::vector<std::pair<const hetc::abi::Program *, int64_t>>
        &programs);

} // namespace hetrt::format

#endif // HETRT_FORMAT_PROGRAMMEMORY_H
