#include "runtime/core/HostNodes.h"

#include "runtime/core/Limits.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>

namespace hetrt::core {

namespace {

/// The topology, loaded once and kept: binding memory needs it.
struct Topology {
  hwloc_topology_t handle = nullptr;
  std::vector<HostNode> nodes;

  Topology() {
    if (hwloc_topology_init(&handle) != 0) {
      handle = nullptr;
      return;
    }
    if (hwloc_topology_load(handle) != 0) {
      hwloc_topology_destroy(handle);
      handle = nullptr;
      return;
    }
    for (hwloc_obj_t node =
             hwloc_get_next_obj_by_type(handle, HWLOC_OBJ_NUMANODE, nullptr);
         node;
         node = hwloc_get_next_obj_by_type(handle, HWLOC_OBJ_NUMANODE, node)) {
      HostNode entry;
      entry.index = node->os_index;
      entry.capacityBytes = node->attr ? node->attr->numanode.local_memory : 0;
      nodes.push_back(entry);
    }
    // A node's cpuset is every thread its parent covers, so a node without
    // cores (attached above the packages) would seem local to all. A
    // thread's own nodes are the nearest ones up its hierarchy.
    for (hwloc_obj_t pu =
             hwloc_get_next_obj_by_type(handle, HWLOC_OBJ_PU, nullptr);
         pu; pu = hwloc_get_next_obj_by_type(handle, HWLOC_OBJ_PU, pu)) {
      hwloc_obj_t above = pu;
      while (above && above->memory_arity == 0)
        above = above->parent;
      if (above)
        countLocal(above->memory_first_child);
    }
  }
  /// Counts a thread for each NUMA node among `memory` and its siblings
  /// (through memory-side caches).
  void countLocal(hwloc_obj_t memory) {
    for (; memory; memory = memory->next_sibling) {
      if (memory->type != HWLOC_OBJ_NUMANODE) {
        countLocal(memory->memory_first_child);
        continue;
      }
      for (HostNode &node : nodes)
        if (node.index == memory->os_index)
          ++node.localThreads;
    }
  }
  ~Topology() {
    if (handle)
      hwloc_topology_destroy(handle);
  }
  Topology(const Topology &) = delete;
  Topology &operator=(const Topology &) = delete;
};

const Topology &topology() {
  static const Topology loaded;
  return loaded;
}

std::string nodeList() {
  std::string names;
  for (const HostNode &node : hostNodes())
    names += (names.empty() ? "" : ", ") + node.name();
  return names.empty() ? "none (hwloc found no NUMA nodes)" : names;
}

} // namespace

const std::vector<HostNode> &hostNodes() { return topology().nodes; }

std::optional<HostNode> hostNodeNamed(const std::string &name,
                                      std::string &error) {
  for (const HostNode &node : hostNodes())
    if (node.name() == name)
      return node;
  error = "\"" + name + "\" is not a NUMA node of this host; its nodes are " +
          nodeList();
  return std::nullopt;
}

std::optional<HostNode> coldestHostNode() {
  const std::vector<HostNode> &nodes = hostNodes();
  if (nodes.size() < 2)
    return std::nullopt;
  std::optional<HostNode> coldest;
  for (const HostNode &node : nodes)
    if (node.localThreads == 0 &&
        (!coldest || node.capacityBytes > coldest->capacityBytes))
      coldest = node;
  return coldest;
}

std::unique_ptr<NodeMemory> NodeMemory::allocate(unsigned index, size_t bytes,
                                                 std::string &error) {
  const Topology &loaded = topology();
  std::string node = "numa" + std::to_string(index);
  if (!loaded.handle) {
    error = "cannot place memory on " + node +
            ": hwloc cannot read this host's topology";
    return nullptr;
  }
  const hwloc_topology_support *support =
      hwloc_topology_get_support(loaded.handle);
  if (!support || !support->membind || !support->membind->alloc_membind ||
      !support->membind->bind_membind) {
    error = "cannot place memory on " + node +
            ": this system does not bind memory to NUMA nodes";
    return nullptr;
  }
  hwloc_bitmap_t nodeset = hwloc_bitmap_alloc();
  if (!nodeset) {
    error = "out of memory";
    return nullptr;
  }
  hwloc_bitmap_only(nodeset, index);
  size_t size = bytes ? bytes : 1;
  // Strict: memory that cannot come from the node is a failure, not
  // memory from elsewhere.
  void *data = hwloc_alloc_membind(
      loaded.handle, size, nodeset, HWLOC_MEMBIND_BIND,
      HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
  int cause = errno;
  hwloc_bitmap_free(nodeset);
  if (!data) {
    error = "cannot place " + formatBytes(size) + " on " + node + ": " +
            std::strerror(cause);
    return nullptr;
  }
  return std::unique_ptr<NodeMemory>(
      new NodeMemory(static_cast<std::byte *>(data), size));
}

NodeMemory::~NodeMemory() { hwloc_free(topology().handle, data_, size_); }

} // namespace hetrt::core
