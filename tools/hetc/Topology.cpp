#include "Topology.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace hetc::cli {

Topology readTopology() {
  Topology topology;
  hwloc_topology_t handle;
  if (hwloc_topology_init(&handle) == 0 && hwloc_topology_load(handle) == 0) {
    topology.cores = hwloc_get_nbobjs_by_type(handle, HWLOC_OBJ_CORE);
    auto cacheSize = [&](hwloc_obj_type_t type) -> uint64_t {
      hwloc_obj_t cache = hwloc_get_obj_by_type(handle, type, 0);
      return cache && cache->attr ? cache->attr->cache.size : 0;
    };
    topology.l2Bytes = cacheSize(HWLOC_OBJ_L2CACHE);
    topology.l3Bytes = cacheSize(HWLOC_OBJ_L3CACHE);
    hwloc_obj_t root = hwloc_get_root_obj(handle);
    topology.memoryBytes = root ? root->total_memory : 0;
    hwloc_topology_destroy(handle);
  }
  if (topology.cores <= 0)
    topology.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (topology.memoryBytes == 0)
    topology.memoryBytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                           static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return topology;
}

} // namespace hetc::cli
