// The blocks of a paged KV cache: which of a pool's blocks hold a sequence's
// positions, which are free, and which hold a known prefix. A block id
// names the same block in every layer's pool; sequences that share a prefix
// share its blocks, counted by reference, and a shared block is copied
// before it is written (copy-on-write).
//
// Prefix caching, as vLLM's: a full block is published under the content
// hash of its tokens and every token before them; a later sequence that
// starts with the same tokens takes the published blocks instead of
// computing them. A published block nobody holds stays cached until the pool
// needs it, least recently released first.
#ifndef HETRT_CORE_KVBLOCKS_H
#define HETRT_CORE_KVBLOCKS_H

#include "runtime/core/KvSwap.h"

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace hetrt::core {

/// The content hash of a block of `tokens` after the block whose hash is
/// `previous` (0 before the first block).
uint64_t kvBlockHash(uint64_t previous, const int32_t *tokens, size_t count);

/// Reference counts of a pool's blocks, the free ones, and the published
/// ones. Not thread-safe.
class KvBlockPool {
public:
  explicit KvBlockPool(int32_t blocks);

  int32_t blocks() const { return static_cast<int32_t>(references_.size()); }
  /// Blocks allocate() can hand out: free ones and cached ones nobody holds.
  int32_t freeBlocks() const {
    return static_cast<int32_t>(free_.size() + evictable_.size());
  }
  /// A block with one reference, or nothing when every block is held. A
  /// free block comes first; else the cached block released longest ago is
  /// evicted from the cache.
  std::optional<int32_t> allocate();
  /// One more owner of `block`, which is held.
  void retain(int32_t block);
  /// One owner fewer; when none is left the block is free again, or stays
  /// cached if it is published.
  void release(int32_t block);
  int32_t references(int32_t block) const {
    return references_[static_cast<size_t>(block)];
  }

  /// Publishes held `block` as holding `tokens` (a whole block) after the
  /// prefix whose hash is `previous`; `hash` is kvBlockHash of them. A
  /// block already published under the hash stays the one found.
  void publish(int32_t block, uint64_t hash, uint64_t previous,
               const int32_t *tokens, size_t count);
  /// The published block of `tokens` after the prefix hashed `previous`,
  /// retained for the caller; nothing when none is (or the hash matches
  /// other tokens).
  std::optional<int32_t> lookup(uint64_t hash, uint64_t previous,
                                const int32_t *tokens, size_t count);
  /// Withdraws `block` from the cache before it is written in place.
  void unpublish(int32_t block);
  bool published(int32_t block) const {
    return entries_[static_cast<size_t>(block)].has_value();
  }
  int32_t publishedBlocks() const {
    return static_cast<int32_t>(byHash_.size());
  }
  /// Cached blocks allocate() has taken back.
  int64_t evictions() const { return evictions_; }

private:
  struct Entry {
    uint64_t hash, previous;
    std::vector<int32_t> tokens;
  };
  std::vector<int32_t> references_;
  /// Blocks holding nothing, the lowest id last, so they go out in order.
  std::vector<int32_t> free_;
  /// Published blocks nobody holds, least recently released first.
  std::list<int32_t> evictable_;
  std::vector<std::list<int32_t>::iterator> evictableAt_;
  std::vector<std::optional<Entry>> entries_;
  std::unordered_map<uint64_t, int32_t> byHash_;
  int64_t evictions_ = 0;
};

/// The blocks one sequence's positions are in, in order: position p is in
/// block `table[p / blockSize]`, which the model code reads as its block
/// table. A block moved out of the pool is -1 in the table and has its
/// tier's slot in `swapped`. `tokens` are the ids at its positions, for the
/// content hashes.
struct KvSequence {
  std::vector<int32_t> table;
  std::vector<std::optional<KvSwapSpace::Handle>> swapped;
  /// When it last ran, for choosing whose blocks leave the pool.
  uint64_t lastRun = 0;
  std::vector<int32_t> tokens;
  /// kvBlockHash of each whole block so far, chained.
  std::vector<uint64_t> hashes;
  /// Positions written so far.
  int64_t length() const { return static_cast<int64_t>(tokens.size()); }
};

} // namespace hetrt::core

#endif // HETRT_CORE_KVBLOCKS_H
