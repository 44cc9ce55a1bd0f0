// The paged KV cache's block pool against a plain model of it: random
// allocations, shares, releases, publications, lookups and withdrawals, a
// million of them, each checked against what the model says must happen.
#include "runtime/core/KvBlocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>

namespace {

using hetrt::core::KvBlockPool;

/// What the pool must be: references, the published blocks by hash, and the
/// unheld published blocks in the order they were released.
struct ReferencePool {
  std::vector<int32_t> references;
  std::map<uint64_t, int32_t> byHash;
  std::map<int32_t, uint64_t> hashOf;
  std::deque<int32_t> evictable;

  explicit ReferencePool(int32_t blocks) : references(blocks, 0) {}
  bool published(int32_t block) const { return hashOf.count(block) > 0; }
  std::vector<int32_t> freeBlocks() const {
    std::vector<int32_t> free;
    for (int32_t block = 0; block < static_cast<int32_t>(references.size());
         ++block)
      if (references[block] == 0 && !published(block))
        free.push_back(block);
    return free;
  }
  void forget(int32_t block) {
    byHash.erase(hashOf.at(block));
    hashOf.erase(block);
    evictable.erase(std::remove(evictable.begin(), evictable.end(), block),
                    evictable.end());
  }
};

/// The tokens a test publishes under `hash`: derived from it, so a lookup
/// can give the right ones or deliberately wrong ones.
std::vector<int32_t> tokensOf(uint64_t hash) {
  return {static_cast<int32_t>(hash), static_cast<int32_t>(hash >> 3), 7};
}

TEST(KvBlockPool, RandomOperationsAgreeWithAPlainModel) {
  constexpr int32_t kBlocks = 24;
  constexpr int kOperations = 1000000;
  KvBlockPool pool(kBlocks);
  ReferencePool expected(kBlocks);
  std::mt19937_64 random(20261205);
  auto pick = [&](int n) {
    return static_cast<int>(random() % static_cast<uint64_t>(n));
  };
  auto held = [&] {
    std::vector<int32_t> blocks;
    for (int32_t block = 0; block < kBlocks; ++block)
      if (expected.references[block] > 0)
        blocks.push_back(block);
    return blocks;
  };
  int64_t evictions = 0;
  for (int operation = 0; operation < kOperations; ++operation) {
    SCOPED_TRACE(operation);
    std::vector<int32_t> holding = held();
    switch (pick(9)) {
    case 0:
    case 1: { // allocate: a free block, else the least recently released
      std::vector<int32_t> free = expected.freeBlocks();
      std::optional<int32_t> block = pool.allocate();
      if (!free.empty()) {
        ASSERT_TRUE(block);
        ASSERT_TRUE(std::count(free.begin(), free.end(), *block));
      } else if (!expected.evictable.empty()) {
        ASSERT_TRUE(block);
        ASSERT_EQ(*block, expected.evictable.front());
        expected.forget(*block);
        ++evictions;
      } else {
        ASSERT_FALSE(block);
        break;
      }
      expected.references[*block] = 1;
      break;
    }
    case 2:
    case 3:
    case 4: { // release a held block
      if (holding.empty())
        break;
      int32_t block = holding[pick(static_cast<int>(holding.size()))];
      pool.release(block);
      if (--expected.references[block] == 0 && expected.published(block))
        expected.evictable.push_back(block);
      break;
    }
    case 5: { // share a held block
      if (holding.empty())
        break;
      int32_t block = holding[pick(static_cast<int>(holding.size()))];
      pool.retain(block);
      ++expected.references[block];
      break;
    }
    case 6: { // publish a held block under one of few hashes
      if (holding.empty())
        break;
      int32_t block = holding[pick(static_cast<int>(holding.size()))];
      uint64_t hash = static_cast<uint64_t>(pick(40));
      std::vector<int32_t> tokens = tokensOf(hash);
      pool.publish(block, hash, hash / 2, tokens.data(), tokens.size());
      if (!expected.published(block) && !expected.byHash.count(hash)) {
        expected.byHash[hash] = block;
        expected.hashOf[block] = hash;
      }
      break;
    }
    case 7: { // look a prefix up, with its tokens or with others
      uint64_t hash = static_cast<uint64_t>(pick(40));
      bool rightTokens = pick(4) != 0;
      std::vector<int32_t> tokens = tokensOf(rightTokens ? hash : hash + 1);
      std::optional<int32_t> block =
          pool.lookup(hash, hash / 2, tokens.data(), tokens.size());
      auto found = expected.byHash.find(hash);
      if (found == expected.byHash.end() || !rightTokens) {
        ASSERT_FALSE(block);
        break;
      }
      ASSERT_TRUE(block);
      ASSERT_EQ(*block, found->second);
      if (expected.references[*block]++ == 0)
        expected.evictable.erase(std::find(expected.evictable.begin(),
                                           expected.evictable.end(), *block));
      break;
    }
    case 8: { // withdraw a block before writing it in place
      int32_t block = pick(kBlocks);
      pool.unpublish(block);
      if (expected.published(block))
        expected.forget(block);
      break;
    }
    }
    for (int32_t block = 0; block < kBlocks; ++block) {
      ASSERT_EQ(pool.references(block), expected.references[block]) << block;
      ASSERT_EQ(pool.published(block), expected.published(block)) << block;
    }
    ASSERT_EQ(pool.freeBlocks(),
              static_cast<int32_t>(expected.freeBlocks().size() +
                                   expected.evictable.size()));
    ASSERT_EQ(pool.publishedBlocks(),
              static_cast<int32_t>(expected.byHash.size()));
    ASSERT_EQ(pool.evictions(), evictions);
  }
  // Every path ran often: the pool filled, cached blocks were evicted.
  EXPECT_GT(evictions, 10000);
}

TEST(KvBlockPool, HashesChainThePrefix) {
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5};
  uint64_t first = hetrt::core::kvBlockHash(0, a.data(), a.size());
  EXPECT_EQ(first, hetrt::core::kvBlockHash(0, a.data(), a.size()));
  EXPECT_NE(first, hetrt::core::kvBlockHash(0, b.data(), b.size()));
  // The same block after another prefix is another block.
  EXPECT_NE(hetrt::core::kvBlockHash(first, a.data(), a.size()),
            hetrt::core::kvBlockHash(
                hetrt::core::kvBlockHash(0, b.data(), b.size()), a.data(),
                a.size()));
}

} // namespace
