#include "runtime/core/KvBlocks.h"

#include <xxhash.h>

#include <algorithm>
#include <cassert>

namespace hetrt::core {

uint64_t kvBlockHash(uint64_t previous, const int32_t *tokens, size_t count) {
  // The previous block's hash seeds this one's, so equal hashes mean equal
  // prefixes, not only equal blocks.
  return XXH3_64bits_withSeed(tokens, count * sizeof(int32_t), previous);
}

KvBlockPool::KvBlockPool(int32_t blocks)
    : references_(static_cast<size_t>(blocks), 0),
      evictableAt_(static_cast<size_t>(blocks)),
      entries_(static_cast<size_t>(blocks)) {
  free_.reserve(static_cast<size_t>(blocks));
  for (int32_t block = blocks - 1; block >= 0; --block)
    free_.push_back(block);
}

std::optional<int32_t> KvBlockPool::allocate() {
  int32_t block;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (!evictable_.empty()) {
    block = evictable_.front();
    evictable_.pop_front();
    byHash_.erase(entries_[static_cast<size_t>(block)]->hash);
    entries_[static_cast<size_t>(block)].reset();
    ++evictions_;
  } else {
    return std::nullopt;
  }
  references_[static_cast<size_t>(block)] = 1;
  return block;
}

void KvBlockPool::retain(int32_t block) {
  int32_t &references = references_[static_cast<size_t>(block)];
  // A cached block nobody held is held again: out of the eviction order.
  if (references == 0) {
    assert(published(block) && "retain of a free block");
    evictable_.erase(evictableAt_[static_cast<size_t>(block)]);
  }
  ++references;
}

void KvBlockPool::release(int32_t block) {
  int32_t &references = references_[static_cast<size_t>(block)];
  assert(references > 0 && "release of a free block");
  if (--references > 0)
    return;
  if (published(block))
    evictableAt_[static_cast<size_t>(block)] =
        evictable_.insert(evictable_.end(), block);
  else
    free_.push_back(block);
}

void KvBlockPool::publish(int32_t block, uint64_t hash, uint64_t previous,
                          const int32_t *tokens, size_t count) {
  assert(references(block) > 0 && "publish of a block nobody holds");
  if (published(block) || byHash_.count(hash))
    return;
  entries_[static_cast<size_t>(block)] =
      Entry{hash, previous, std::vector<int32_t>(tokens, tokens + count)};
  byHash_[hash] = block;
}

std::optional<int32_t> KvBlockPool::lookup(uint64_t hash, uint64_t previous,
                                           const int32_t *tokens,
                                           size_t count) {
  auto found = byHash_.find(hash);
  if (found == byHash_.end())
    return std::nullopt;
  int32_t block = found->second;
  const Entry &entry = *entries_[static_cast<size_t>(block)];
  // The hash chains the prefix; the tokens are compared too, so a hash
  // collision costs a recomputation, never another prompt's keys.
  if (entry.previous != previous || entry.tokens.size() != count ||
      !std::equal(entry.tokens.begin(), entry.tokens.end(), tokens))
    return std::nullopt;
  retain(block);
  return block;
}

void KvBlockPool::unpublish(int32_t block) {
  std::optional<Entry> &entry = entries_[static_cast<size_t>(block)];
  if (!entry)
    return;
  byHash_.erase(entry->hash);
  entry.reset();
  if (references(block) == 0) {
    evictable_.erase(evictableAt_[static_cast<size_t>(block)]);
    free_.push_back(block);
  }
}

} // namespace hetrt::core
