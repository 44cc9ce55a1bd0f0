// The paged KV cache's sequences against a plain model of them: a million
// random runs, batches, forks and removals over a small pool whose blocks
// move to host memory and disk and back, share prefixes and are copied
// before a shared one is written. The store holds, for every position, a
// hash of the tokens up to it (what a model's keys and values depend on),
// so every block a sequence reads can be checked against the tokens the
// model says the sequence holds.
#include "runtime/core/HostNodes.h"
#include "runtime/core/KvCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>

namespace {

using hetrt::core::KvCache;
using hetrt::core::KvSequence;
using SequenceId = KvCache::SequenceId;

constexpr int64_t kBlockSize = 4;
constexpr int32_t kPoolBlocks = 12;
constexpr int64_t kContext = 32;

/// What the code would write at a position: a hash of every token up to
/// and including it.
uint64_t contentAfter(uint64_t previous, int32_t token) {
  uint64_t x = previous ^ (static_cast<uint64_t>(token) + 0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

/// A pool of blocks in host memory, one uint64 per position.
class MemoryStore : public hetrt::core::KvBlockStore {
public:
  MemoryStore() : slots_(kPoolBlocks * kBlockSize, 0) {}
  size_t blockBytes() const override { return kBlockSize * 8; }
  hetrt::core::KvBlockRows blockRows() const override { return {2, 4}; }
  bool gatherBlock(int32_t block, std::byte *out, std::string &) override {
    std::memcpy(out, &slots_[block * kBlockSize], blockBytes());
    return true;
  }
  bool scatterBlock(const std::byte *in, int32_t block,
                    std::string &) override {
    std::memcpy(&slots_[block * kBlockSize], in, blockBytes());
    return true;
  }
  bool copyBlock(int32_t from, int32_t to, std::string &) override {
    std::copy_n(&slots_[from * kBlockSize], kBlockSize,
                &slots_[to * kBlockSize]);
    return true;
  }
  uint64_t &slot(int32_t block, int64_t offset) {
    return slots_[block * kBlockSize + offset];
  }

private:
  std::vector<uint64_t> slots_;
};

/// What the code does for a run: writes the new positions' contents
/// through the table, then the ids join the sequence.
void writeRun(MemoryStore &store, KvCache &kv, KvSequence &sequence,
              const int32_t *ids, int64_t count) {
  uint64_t previous = 0;
  int64_t length = sequence.length();
  if (length > 0) {
    int32_t block = sequence.table[(length - 1) / kBlockSize];
    previous = store.slot(block, (length - 1) % kBlockSize);
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t position = length + i;
    previous = contentAfter(previous, ids[i]);
    store.slot(sequence.table[position / kBlockSize],
               position % kBlockSize) = previous;
  }
  sequence.tokens.insert(sequence.tokens.end(), ids, ids + count);
  kv.publishBlocks(sequence);
}

TEST(KvCache, RandomRunsForksAndTiersAgreeWithAPlainModel) {
  constexpr int kOperations = 1000000;
  constexpr size_t kMaxSequences = 5;
  MemoryStore store;
  KvCache kv(store, kPoolBlocks, kBlockSize, kContext);
  std::string error;
  ASSERT_TRUE(kv.setBudget("host", 6 * store.blockBytes(), error)) << error;
  ASSERT_TRUE(
      kv.setBudget("disk", 8 * store.blockBytes(), error, testing::TempDir()))
      << error;
  // The model: each sequence's tokens.
  std::map<SequenceId, std::vector<int32_t>> expected = {
      {KvCache::kDefaultSequence, {}}};
  std::mt19937_64 random(20261205);
  auto pick = [&](int64_t n) {
    return static_cast<int64_t>(random() % static_cast<uint64_t>(n));
  };
  auto anySequence = [&] {
    auto it = expected.begin();
    std::advance(it, pick(static_cast<int64_t>(expected.size())));
    return it->first;
  };
  // Three texts that sequences mostly follow, so prefixes repeat.
  std::vector<std::vector<int32_t>> texts(3);
  for (std::vector<int32_t> &text : texts)
    for (int64_t i = 0; i < kContext; ++i)
      text.push_back(static_cast<int32_t>(pick(50)));
  auto nextIds = [&](const std::vector<int32_t> &held, int64_t count) {
    std::vector<int32_t> ids;
    const std::vector<int32_t> &text = texts[pick(3)];
    for (int64_t i = 0; i < count; ++i) {
      size_t at = held.size() + static_cast<size_t>(i);
      ids.push_back(pick(8) != 0 ? text[at] : static_cast<int32_t>(pick(50)));
    }
    return ids;
  };
  // A resident sequence's blocks hold the contents of its tokens.
  auto checkContents = [&](SequenceId id) {
    KvSequence *sequence = kv.find(id, 0, error);
    ASSERT_TRUE(sequence) << error;
    const std::vector<int32_t> &tokens = expected.at(id);
    ASSERT_EQ(sequence->tokens, tokens);
    uint64_t content = 0;
    for (size_t p = 0; p < tokens.size(); ++p) {
      content = contentAfter(content, tokens[p]);
      int32_t block = sequence->table[p / kBlockSize];
      if (block < 0)
        continue; // in a tier; checked when it comes back
      ASSERT_EQ(store.slot(block, static_cast<int64_t>(p) % kBlockSize),
                content)
          << "sequence " << id << ", position " << p;
    }
  };
  // The pool's counts follow from the tables: a block held by several
  // entries is shared, every held block is not free, and the tiers hold
  // exactly the moved-out entries.
  auto checkAccounting = [&] {
    std::map<int32_t, int> holders;
    int64_t movedOut = 0;
    for (const auto &[id, tokens] : expected) {
      KvSequence *sequence = kv.find(id, 0, error);
      ASSERT_TRUE(sequence) << error;
      ASSERT_EQ(sequence->table.size(), sequence->swapped.size());
      for (size_t i = 0; i < sequence->table.size(); ++i) {
        if (sequence->table[i] >= 0) {
          ++holders[sequence->table[i]];
          ASSERT_FALSE(sequence->swapped[i]);
        } else {
          ++movedOut;
          ASSERT_TRUE(sequence->swapped[i]);
        }
      }
    }
    hetrt::core::KvUsage usage = kv.usage();
    int64_t shared = 0;
    for (const auto &[block, count] : holders)
      shared += count > 1;
    ASSERT_EQ(usage.sharedBlocks, shared);
    ASSERT_EQ(usage.freeBlocks,
              kPoolBlocks - static_cast<int64_t>(holders.size()));
    ASSERT_EQ(usage.swaps.hostBytes + usage.swaps.diskBytes,
              movedOut * static_cast<int64_t>(store.blockBytes()));
  };

  int64_t runs = 0, refused = 0, batches = 0, forks = 0;
  for (int operation = 0; operation < kOperations; ++operation) {
    SCOPED_TRACE("operation " + std::to_string(operation));
    switch (pick(10)) {
    case 0:
    case 1:
    case 2:
    case 3: { // a prefill (taking a cached prefix) or a decode step
      SequenceId id = anySequence();
      std::vector<int32_t> &tokens = expected.at(id);
      int64_t room = kContext - static_cast<int64_t>(tokens.size());
      if (room == 0) {
        ASSERT_FALSE(kv.find(id, 1, error));
        break;
      }
      int64_t count = 1 + pick(std::min<int64_t>(room, 3 * kBlockSize));
      std::vector<int32_t> ids = nextIds(tokens, count);
      KvSequence *sequence = kv.find(id, count, error);
      ASSERT_TRUE(sequence) << error;
      size_t blocksBefore = sequence->table.size();
      int64_t reused =
          count > 1 ? kv.reusePrefix(*sequence, ids.data(), count) : 0;
      if (!kv.prepare(id, *sequence, count - reused, error)) {
        ASSERT_EQ(kv.lastFailure(), hetrt::core::Failure::OutOfMemory)
            << error;
        kv.dropReused(*sequence, blocksBefore, reused);
        ++refused;
        ASSERT_EQ(sequence->tokens, tokens);
        break;
      }
      writeRun(store, kv, *sequence, ids.data() + reused, count - reused);
      kv.countReused(reused);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      ++runs;
      checkContents(id);
      break;
    }
    case 4: { // one decode step of several sequences at once
      std::vector<SequenceId> ids;
      for (const auto &[id, tokens] : expected)
        if (static_cast<int64_t>(tokens.size()) < kContext && pick(2))
          ids.push_back(id);
      if (ids.empty())
        break;
      std::vector<KvSequence *> members;
      for (SequenceId id : ids) {
        members.push_back(kv.find(id, 1, error));
        ASSERT_TRUE(members.back()) << error;
      }
      std::vector<int32_t> tables;
      size_t width = 0;
      if (!kv.prepareBatch(ids, members, tables, width, error)) {
        ASSERT_EQ(kv.lastFailure(), hetrt::core::Failure::OutOfMemory)
            << error;
        ++refused;
        break;
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        std::vector<int32_t> &tokens = expected.at(ids[i]);
        ASSERT_TRUE(std::equal(members[i]->table.begin(),
                               members[i]->table.end(),
                               tables.begin() + static_cast<long>(i * width)));
        std::vector<int32_t> next = nextIds(tokens, 1);
        writeRun(store, kv, *members[i], next.data(), 1);
        tokens.push_back(next[0]);
      }
      // Every member was in the pool at once.
      for (SequenceId id : ids)
        checkContents(id);
      ++batches;
      break;
    }
    case 5:
    case 6: { // a new sequence, or a fork of another's first positions
      if (expected.size() >= kMaxSequences)
        break;
      if (pick(2)) {
        expected[kv.createSequence()] = {};
        break;
      }
      SequenceId from = anySequence();
      const std::vector<int32_t> &tokens = expected.at(from);
      int64_t length =
          pick(static_cast<int64_t>(tokens.size()) + 1);
      SequenceId forked = -1;
      if (!kv.forkSequence(from, length, forked, error)) {
        ASSERT_EQ(kv.lastFailure(), hetrt::core::Failure::OutOfMemory)
            << error;
        ++refused;
        break;
      }
      expected[forked] =
          std::vector<int32_t>(tokens.begin(), tokens.begin() + length);
      checkContents(from);
      checkContents(forked);
      ++forks;
      break;
    }
    case 7:
    case 8: { // a sequence removed
      if (expected.size() <= 1)
        break;
      SequenceId id = anySequence();
      ASSERT_TRUE(kv.removeSequence(id, error)) << error;
      expected.erase(id);
      ASSERT_FALSE(kv.hasSequence(id));
      break;
    }
    case 9: // positions as the model says
      for (const auto &[id, tokens] : expected)
        ASSERT_EQ(kv.position(id), static_cast<int64_t>(tokens.size()));
      break;
    }
    checkAccounting();
    if (operation % 4096 == 0)
      for (const auto &[id, tokens] : expected)
        checkContents(id);
  }
  // Every path ran often: blocks went to both tiers and came back, were
  // copied, shared and reused, and full pools refused runs.
  hetrt::core::KvUsage usage = kv.usage();
  std::printf("KvCache: %lld runs, %lld batches, %lld forks, %lld refused; "
              "blocks to host %lld, from host %lld, to disk %lld, from disk "
              "%lld; copied %lld; reused tokens %lld; evicted %lld\n",
              (long long)runs, (long long)batches, (long long)forks,
              (long long)refused, (long long)usage.swaps.toHost,
              (long long)usage.swaps.fromHost, (long long)usage.swaps.toDisk,
              (long long)usage.swaps.fromDisk, (long long)usage.copiedBlocks,
              (long long)usage.reusedTokens, (long long)usage.evictedBlocks);
  EXPECT_GT(runs, 100000);
  EXPECT_GT(batches, 10000);
  EXPECT_GT(forks, 10000);
  EXPECT_GT(refused, 1000);
  EXPECT_GT(usage.swaps.fromHost, 10000);
  EXPECT_GT(usage.swaps.fromDisk, 10000);
  EXPECT_GT(usage.copiedBlocks, 10000);
  EXPECT_GT(usage.reusedTokens, 10000);
}

// A cache's tiers as memory spaces: blocks moved out of the pool count
// as migrations out of every space holding part of the pool (by its share
// of a block) and into the tier that took them, and the tiers hold what
// the cache says they hold.
TEST(KvCache, TiersAppearAsMemorySpacesWithTheirMigrations) {
  hetrt::core::KvUsage usage;
  usage.blockBytes = 100;
  usage.swaps.toHost = 3;
  usage.swaps.fromHost = 2;
  usage.swaps.toDisk = 1;
  usage.swaps.fromDisk = 1;
  usage.swaps.hostBytes = 100;
  usage.swaps.diskBytes = 100;
  std::vector<hetrt::core::MemorySpaceStats> spaces;
  hetrt::core::addKvSpaces(usage, {{"gpu.vram", 60}, {"gpu.bar", 40}},
                           spaces);
  ASSERT_EQ(spaces.size(), 4u);
  EXPECT_EQ(spaces[0].name, "gpu.vram");
  EXPECT_EQ(spaces[0].migrationsOut, 4u);
  EXPECT_EQ(spaces[0].bytesOut, 240u);
  EXPECT_EQ(spaces[0].migrationsIn, 3u);
  EXPECT_EQ(spaces[0].bytesIn, 180u);
  EXPECT_EQ(spaces[1].bytesOut, 160u);
  EXPECT_EQ(spaces[2].name, hetrt::core::hostMemorySpace());
  EXPECT_EQ(spaces[2].held(hetrt::core::MemoryRole::KvTier), 100u);
  EXPECT_EQ(spaces[2].migrationsIn, 3u);
  EXPECT_EQ(spaces[2].bytesIn, 300u);
  EXPECT_EQ(spaces[2].migrationsOut, 2u);
  EXPECT_GT(spaces[2].capacityBytes, 0u);
  EXPECT_EQ(spaces[3].name, "disk");
  EXPECT_EQ(spaces[3].migrationsIn, 1u);
  EXPECT_EQ(spaces[3].bytesOut, 100u);
  // No disk tier in use: no disk space.
  usage.swaps = {};
  spaces.clear();
  hetrt::core::addKvSpaces(usage, {{"gpu.vram", 60}}, spaces);
  EXPECT_EQ(spaces.size(), 2u);
}

TEST(KvCache, TheHostTierGoesOnTheNumaNodeABudgetNames) {
  if (hetrt::core::hostNodes().empty())
    GTEST_SKIP() << "hwloc finds no NUMA node on this host";
  const hetrt::core::HostNode &node = hetrt::core::hostNodes().front();
  MemoryStore store;
  KvCache kv(store, 2, kBlockSize, kContext);
  std::string error;
  EXPECT_FALSE(kv.setBudget("numa4095", store.blockBytes(), error));
  EXPECT_NE(error.find("--kv-budget numa4095: \"numa4095\" is not a NUMA "
                       "node of this host; its nodes are numa"),
            std::string::npos)
      << error;
  EXPECT_FALSE(kv.setBudget(node.name(), node.capacityBytes, error));
  EXPECT_NE(error.find("more than half of " + node.name()), std::string::npos)
      << error;
  ASSERT_TRUE(kv.setBudget(node.name(), 3 * store.blockBytes(), error))
      << error;
  // Three sequences of one block over a pool of two: one moves out to the
  // node and comes back.
  std::vector<SequenceId> ids = {KvCache::kDefaultSequence,
                                 kv.createSequence(), kv.createSequence()};
  for (int round = 0; round < 2; ++round)
    for (SequenceId id : ids) {
      int32_t token = id + round;
      KvSequence *sequence = kv.findRun(id, &token, 1, 50, error);
      ASSERT_TRUE(sequence) << error;
      ASSERT_TRUE(kv.prepare(id, *sequence, 1, error)) << error;
      writeRun(store, kv, *sequence, &token, 1);
    }
  hetrt::core::KvUsage usage = kv.usage();
  EXPECT_EQ(usage.hostTierNode, node.name());
  EXPECT_EQ(usage.hostBudgetBlocks, 3);
  EXPECT_GT(usage.swaps.toHost, 0);
  EXPECT_GT(usage.swaps.fromHost, 0);
  std::vector<hetrt::core::MemorySpaceStats> spaces;
  hetrt::core::addKvSpaces(usage, {{"cpu0.host", store.blockBytes()}},
                           spaces);
  ASSERT_EQ(spaces.size(), 2u);
  EXPECT_EQ(spaces[1].name, "cpu0." + node.name());
  EXPECT_EQ(spaces[1].capacityBytes, node.capacityBytes);
  EXPECT_EQ(spaces[1].migrationsIn, static_cast<uint64_t>(usage.swaps.toHost));
}

} // namespace
