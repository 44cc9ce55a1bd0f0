// The blocks of a paged KV cache: which of a pool's blocks hold a sequence's
// positions, and which are free. A block id names the same block in every
// layer's pool; sequences that share a prefix share its blocks, counted by
// reference, and a shared block is copied before it is written
// (copy-on-write).
#ifndef HETRT_CORE_KVBLOCKS_H
#define HETRT_CORE_KVBLOCKS_H

#include <cstdint>
#include <optional>
#include <vector>

namespace hetrt::core {

/// Reference counts of a pool's blocks and the free ones. Not thread-safe.
class KvBlockPool {
public:
  explicit KvBlockPool(int32_t blocks);

  int32_t blocks() const { return static_cast<int32_t>(references_.size()); }
  int32_t freeBlocks() const { return static_cast<int32_t>(free_.size()); }
  /// A free block with one reference, or nothing when every block is taken.
  std::optional<int32_t> allocate();
  /// One more owner of `block`, which is taken.
  void retain(int32_t block);
  /// One owner fewer; the block is free again when none is left.
  void release(int32_t block);
  int32_t references(int32_t block) const {
    return references_[static_cast<size_t>(block)];
  }

private:
  std::vector<int32_t> references_;
  /// Free blocks, the lowest id last, so blocks are handed out in order.
  std::vector<int32_t> free_;
};

/// The blocks one sequence's positions are in, in order: position p is in
/// block `table[p / blockSize]`, which the model code reads as its block
/// table.
struct KvSequence {
  std::vector<int32_t> table;
  /// Positions written so far.
  int64_t length = 0;
};

} // namespace hetrt::core

#endif // HETRT_CORE_KVBLOCKS_H
