// The host's cores, caches and memory as hwloc reads them (from sysfs):
// glibc's sysconf cache sizes can be far off in virtual machines (an AMD
// guest with a 32 MiB L3 reads 320 MiB).
#ifndef HETC_TOOLS_TOPOLOGY_H
#define HETC_TOOLS_TOPOLOGY_H

#include <cstdint>

namespace hetc::cli {

struct Topology {
  int cores = 0;
  /// The first cache of each level (0 when hwloc does not know it).
  uint64_t l2Bytes = 0;
  uint64_t l3Bytes = 0;
  uint64_t memoryBytes = 0;
};

Topology readTopology();

} // namespace hetc::cli

#endif // HETC_TOOLS_TOPOLOGY_H
