// Measuring the host's memory read bandwidth, the bound decode speed is judged
// against (the roofline).
#ifndef HETRT_CORE_BANDWIDTH_H
#define HETRT_CORE_BANDWIDTH_H

#include "runtime/core/ThreadPool.h"

#include <cstddef>

namespace hetrt::core {

/// Reads a `bytes`-sized buffer (larger than the caches for a DRAM figure)
/// with every thread of `pool`, `repeats` times, and returns the best rate in
/// bytes per second. The buffer is written once first so its pages exist.
double measureReadBandwidth(ThreadPool &pool, size_t bytes, int repeats);

} // namespace hetrt::core

#endif // HETRT_CORE_BANDWIDTH_H
