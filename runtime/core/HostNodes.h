// The host's memory as its NUMA nodes, as hwloc reads them: the DRAM beside
// each socket's cores, and nodes without cores of their own (a CXL memory
// expander, far memory), which are slower to reach and the natural home of
// data nobody needs soon. Memory bound to a node comes only from that node
// (strict binding), so a buffer a caller places there is never silently
// somewhere else.
#ifndef HETRT_CORE_HOSTNODES_H
#define HETRT_CORE_HOSTNODES_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetrt::core {

struct HostNode {
  /// The operating system's number for the node ("numa<index>").
  unsigned index = 0;
  uint64_t capacityBytes = 0;
  /// Hardware threads whose local memory it is; 0 for a node of memory alone.
  int localThreads = 0;

  /// "numa<index>", the node's memory name on cpu0.
  std::string name() const { return "numa" + std::to_string(index); }
};

/// The host's NUMA nodes, read once per process (empty when hwloc cannot
/// read the topology: the host is then one memory).
const std::vector<HostNode> &hostNodes();

/// The node named "numa<N>", or nothing with `error` listing the nodes.
std::optional<HostNode> hostNodeNamed(const std::string &name,
                                      std::string &error);

/// Where cold data goes by default: the node without cores with the most
/// memory, when the host has more than one node and such a node.
std::optional<HostNode> coldestHostNode();

/// Memory bound to one node, page-aligned, freed when the last owner drops it.
class NodeMemory {
public:
  /// `bytes` of node `index`'s memory; nothing, with `error` naming the
  /// node, the bytes and the cause, when the system refuses the binding.
  static std::unique_ptr<NodeMemory> allocate(unsigned index, size_t bytes,
                                              std::string &error);
  ~NodeMemory();
  NodeMemory(const NodeMemory &) = delete;
  NodeMemory &operator=(const NodeMemory &) = delete;

  std::byte *data() const { return data_; }
  size_t size() const { return size_; }

private:
  NodeMemory(std::byte *data, size_t size) : data_(data), size_(size) {}
  std::byte *data_;
  size_t size_;
};

} // namespace hetrt::core

#endif // HETRT_CORE_HOSTNODES_H
