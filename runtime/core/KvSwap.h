// The KV cache's slower tiers: where a block's keys and values go when the
// pool the model code reads has no room for them, and come back from before
// the sequence runs again. Host memory holds up to its budget of blocks; a
// file on disk (created in a directory and unlinked at once, so nothing is
// left behind) holds up to its own. Blocks are moved whole, as the bytes the
// pool holds, so a sequence's tokens never depend on the tier its blocks
// went through.
#ifndef HETRT_CORE_KVSWAP_H
#define HETRT_CORE_KVSWAP_H

#include "runtime/core/Failure.h"
#include "runtime/core/HostNodes.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetrt::core {

/// Blocks moved out of the pool and back, per tier.
struct KvSwapStats {
  int64_t toHost = 0, fromHost = 0;
  int64_t toDisk = 0, fromDisk = 0;
  /// Bytes the tiers hold now.
  int64_t hostBytes = 0, diskBytes = 0;
};

/// How blocks are kept in the tiers: as the pool holds them (lossless), or
/// as int8 with an f32 scale per row of a head's elements (as FlexGen and
/// LMCache compress offloaded caches: a quarter of f32's bytes, about half
/// of f16's, at the cost of rounding every key and value).
enum class KvTierFormat { Exact, Int8 };

/// A block's layout for compressing it: rows of `rowElements` elements of
/// `elementBytes` (4: f32, 2: f16, or bf16 where `bfloat`).
struct KvBlockRows {
  size_t rowElements = 0;
  size_t elementBytes = 4;
  bool bfloat = false;
};

/// Not thread-safe.
class KvSwapSpace {
public:
  /// A slot of a tier.
  struct Handle {
    bool onDisk = false;
    int64_t index = 0;
  };

  /// Tiers for blocks of `blockBytes`: at most `hostBlocks` in host memory
  /// and `diskBlocks` in a file under `directory` (created when first
  /// needed). A budget of 0 leaves the tier out. Host memory is `hostNode`'s
  /// alone where one is given, and then holds at most half of the node.
  KvSwapSpace(size_t blockBytes, int64_t hostBlocks, int64_t diskBlocks,
              std::string directory, KvTierFormat format = KvTierFormat::Exact,
              KvBlockRows rows = {},
              std::optional<HostNode> hostNode = std::nullopt);
  ~KvSwapSpace();
  KvSwapSpace(const KvSwapSpace &) = delete;
  KvSwapSpace &operator=(const KvSwapSpace &) = delete;

  /// Blocks the tiers can still take.
  int64_t room() const;
  /// Stores a block's bytes in host memory if it has room, else on disk.
  /// Nothing, with `error` naming the tier and the cause, when neither can.
  std::optional<Handle> store(const std::byte *block, std::string &error);
  /// Copies a stored block back into `block` and frees its slot.
  bool load(Handle handle, std::byte *block, std::string &error);
  /// Frees a stored block's slot without reading it.
  void discard(Handle handle);
  const KvSwapStats &stats() const { return stats_; }
  /// The kind of the last failure of store or load: OutOfMemory when the
  /// tiers are full, Io when the disk file cannot be made, written or read.
  Failure failure() const { return failure_; }

  KvTierFormat format() const { return format_; }
  /// Blocks host memory may hold.
  int64_t hostBlocks() const { return hostBlocks_; }
  /// Bytes one block takes in the tiers (fewer than the pool's as int8).
  size_t storedBytes() const { return storedBytes_; }

private:
  bool openFile(std::string &error);
  /// A block in the tiers' format (compressed into staged_), and back.
  const std::byte *encode(const std::byte *block);
  void decode(const std::byte *stored, std::byte *block) const;

  size_t blockBytes_;
  KvTierFormat format_;
  KvBlockRows rows_;
  /// Bytes of a block as the tiers keep it.
  size_t storedBytes_;
  std::vector<std::byte> staged_;
  int64_t hostBlocks_, diskBlocks_;
  std::string directory_;
  /// Host memory's slots, allocated a slab of kSlabSlots at a time (bound
  /// memory comes in pages, and one mapping per block would run into the
  /// system's limit on mappings).
  static constexpr int64_t kSlabSlots = 16;
  struct HostSlab {
    std::unique_ptr<std::byte[]> plain;
    std::unique_ptr<NodeMemory> bound;
    std::byte *data() const { return bound ? bound->data() : plain.get(); }
  };
  std::byte *hostSlot(int64_t index) const;
  std::optional<HostNode> hostNode_;
  std::vector<HostSlab> host_;
  int64_t hostSlots_ = 0;
  std::vector<int64_t> freeHost_;
  int64_t hostUsed_ = 0;
  int fd_ = -1;
  /// Slots of the file ever written, and the free ones among them.
  int64_t diskSlots_ = 0;
  std::vector<int64_t> freeDisk_;
  int64_t diskUsed_ = 0;
  KvSwapStats stats_;
  Failure failure_ = Failure::Io;
};

} // namespace hetrt::core

#endif // HETRT_CORE_KVSWAP_H
