#include "runtime/core/KvCache.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace hetrt::core {

namespace {
std::string defaultSwapDirectory() {
  const char *tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}
} // namespace

KvCache::KvCache(KvBlockStore &store, int32_t poolBlocks, int64_t blockSize,
                 int64_t contextLength)
    : store_(store), blocks_(poolBlocks), compiledBlocks_(poolBlocks),
      blockSize_(blockSize), contextLength_(contextLength),
      swapDirectory_(defaultSwapDirectory()), hostNode_(coldestHostNode()) {
  sequences_[kDefaultSequence] = KvSequence();
  blockBuffer_.resize(store_.blockBytes());
  resetTiers();
}

void KvCache::resetTiers() {
  swap_ = std::make_unique<KvSwapSpace>(store_.blockBytes(), hostBudget_,
                                        diskBudget_, swapDirectory_,
                                        tierFormat_, store_.blockRows(),
                                        hostNode_);
}

bool KvCache::anyBlockMovedOut() const {
  for (const auto &[id, sequence] : sequences_)
    for (int32_t block : sequence.table)
      if (block < 0)
        return true;
  return false;
}

bool KvCache::setTierFormat(KvTierFormat format, std::string &error) {
  if (anyBlockMovedOut()) {
    error = "the KV tiers hold blocks already; choose their format before "
            "the first run";
    return false;
  }
  tierFormat_ = format;
  resetTiers();
  return true;
}

KvCache::SequenceId KvCache::createSequence() {
  SequenceId id = nextSequence_++;
  sequences_[id] = KvSequence();
  return id;
}

bool KvCache::forkSequence(SequenceId from, int64_t tokens,
                           SequenceId &forked, std::string &error) {
  auto source = sequences_.find(from);
  if (source == sequences_.end()) {
    error = "cannot fork sequence " + std::to_string(from) +
            ": there is no such sequence";
    return false;
  }
  if (tokens < 0 || tokens > source->second.length()) {
    error = "cannot fork the first " + std::to_string(tokens) +
            " positions of sequence " + std::to_string(from) + ": it holds " +
            std::to_string(source->second.length());
    return false;
  }
  // Blocks are shared by their place in the pool.
  if (!makeResident(from, source->second, error))
    return false;
  const KvSequence &original = source->second;
  KvSequence copy;
  size_t shared = static_cast<size_t>((tokens + blockSize_ - 1) / blockSize_);
  copy.table.assign(original.table.begin(),
                    original.table.begin() + static_cast<long>(shared));
  copy.tokens.assign(original.tokens.begin(),
                     original.tokens.begin() + static_cast<long>(tokens));
  copy.hashes.assign(original.hashes.begin(),
                     original.hashes.begin() +
                         static_cast<long>(tokens / blockSize_));
  copy.swapped.resize(copy.table.size());
  for (int32_t block : copy.table)
    blocks_.retain(block);
  forked = nextSequence_++;
  sequences_[forked] = std::move(copy);
  return true;
}

bool KvCache::removeSequence(SequenceId sequence, std::string &error) {
  auto found = sequences_.find(sequence);
  if (found == sequences_.end()) {
    error = "cannot remove sequence " + std::to_string(sequence) +
            ": there is no such sequence";
    return false;
  }
  KvSequence &removed = found->second;
  for (size_t i = 0; i < removed.table.size(); ++i) {
    if (removed.table[i] >= 0)
      blocks_.release(removed.table[i]);
    else
      swap_->discard(*removed.swapped[i]);
  }
  sequences_.erase(found);
  return true;
}

void KvCache::reset() {
  std::string ignored;
  if (hasSequence(kDefaultSequence))
    removeSequence(kDefaultSequence, ignored);
  sequences_[kDefaultSequence] = KvSequence();
}

int64_t KvCache::position(SequenceId sequence) const {
  auto found = sequences_.find(sequence);
  return found == sequences_.end() ? 0 : found->second.length();
}

KvUsage KvCache::usage() const {
  KvUsage usage;
  usage.blockSize = blockSize_;
  usage.blocks = blocks_.blocks();
  usage.freeBlocks = blocks_.freeBlocks();
  for (int32_t block = 0; block < blocks_.blocks(); ++block)
    usage.sharedBlocks += blocks_.references(block) > 1;
  usage.copiedBlocks = copiedBlocks_;
  usage.cachedBlocks = blocks_.publishedBlocks();
  usage.evictedBlocks = blocks_.evictions();
  usage.reusedTokens = reusedTokens_;
  usage.blockBytes = static_cast<int64_t>(store_.blockBytes());
  usage.swaps = swap_->stats();
  usage.hostBudgetBlocks = swap_->hostBlocks();
  usage.hostTierNode = hostNode_ ? hostNode_->name() : "";
  usage.tiersInt8 = tierFormat_ == KvTierFormat::Int8;
  usage.tierBlockBytes = static_cast<int64_t>(swap_->storedBytes());
  usage.diskBudgetBlocks = diskBudget_;
  return usage;
}

int64_t KvCache::blocksToWrite(const KvSequence &sequence,
                               int64_t count) const {
  int64_t first = sequence.length() / blockSize_;
  int64_t last = (sequence.length() + count - 1) / blockSize_;
  int64_t needed = 0;
  for (int64_t index = first; index <= last; ++index) {
    if (index >= static_cast<int64_t>(sequence.table.size())) {
      ++needed;
      continue;
    }
    // A moved-out block comes back unshared; a shared one is copied.
    int32_t block = sequence.table[static_cast<size_t>(index)];
    needed += block >= 0 && blocks_.references(block) > 1;
  }
  return needed;
}

int64_t KvCache::movableBlocks(SequenceId running) const {
  int64_t movable = 0;
  for (const auto &[id, sequence] : sequences_)
    if (id != running && !inBatch(id))
      for (int32_t block : sequence.table)
        movable += block >= 0 && blocks_.references(block) == 1;
  return std::min(movable, swap_->room());
}

std::optional<int32_t> KvCache::allocateBlock(SequenceId running,
                                              std::string &error) {
  if (std::optional<int32_t> block = blocks_.allocate())
    return block;
  // The sequence that ran longest ago gives up its last block that no
  // other sequence holds: the one it will read last when it runs again.
  KvSequence *victim = nullptr;
  size_t victimIndex = 0;
  for (auto &[id, sequence] : sequences_) {
    if (id == running || inBatch(id) ||
        (victim && victim->lastRun <= sequence.lastRun))
      continue;
    for (size_t i = sequence.table.size(); i-- > 0;)
      if (sequence.table[i] >= 0 &&
          blocks_.references(sequence.table[i]) == 1) {
        victim = &sequence;
        victimIndex = i;
        break;
      }
  }
  if (!victim) {
    failure_ = Failure::OutOfMemory;
    error = "the KV pool is full: every block of its " +
            std::to_string(blocks_.blocks()) +
            " is held by the running sequence or shared; remove sequences, "
            "or compile with a larger --context";
    return std::nullopt;
  }
  int32_t block = victim->table[victimIndex];
  if (!store_.gatherBlock(block, blockBuffer_.data(), error)) {
    failure_ = Failure::Io;
    return std::nullopt;
  }
  std::optional<KvSwapSpace::Handle> handle =
      swap_->store(blockBuffer_.data(), error);
  if (!handle) {
    failure_ = swap_->failure();
    return std::nullopt;
  }
  // Its bytes now live in a tier: the prefix cache can no longer point at
  // the pool's block.
  blocks_.unpublish(block);
  blocks_.release(block);
  victim->table[victimIndex] = -1;
  victim->swapped[victimIndex] = handle;
  return blocks_.allocate();
}

bool KvCache::makeResident(SequenceId id, KvSequence &sequence,
                           std::string &error) {
  for (size_t i = 0; i < sequence.table.size(); ++i) {
    if (sequence.table[i] >= 0)
      continue;
    std::optional<int32_t> block = allocateBlock(id, error);
    if (!block)
      return false;
    if (!swap_->load(*sequence.swapped[i], blockBuffer_.data(), error)) {
      failure_ = swap_->failure();
      blocks_.release(*block);
      return false;
    }
    if (!store_.scatterBlock(blockBuffer_.data(), *block, error)) {
      failure_ = Failure::Io;
      blocks_.release(*block);
      return false;
    }
    sequence.table[i] = *block;
    sequence.swapped[i].reset();
  }
  return true;
}

bool KvCache::setBudget(const std::string &space, uint64_t bytes,
                        std::string &error, const std::string &directory) {
  int64_t blocks = static_cast<int64_t>(
      std::min<uint64_t>(bytes / store_.blockBytes(), INT64_MAX / 4));
  bool anyBlockUsed = blocks_.freeBlocks() != blocks_.blocks();
  bool anySwapped = anyBlockMovedOut();
  if (space == "pool") {
    if (blocks < 1 || blocks > compiledBlocks_) {
      error = "--kv-budget pool=" + std::to_string(bytes) + ": the pool holds " +
              std::to_string(compiledBlocks_) + " blocks of " +
              std::to_string(store_.blockBytes()) +
              " bytes; give between one block and all of them";
      return false;
    }
    if (anyBlockUsed || anySwapped) {
      error = "--kv-budget pool: the pool is in use; set its budget before "
              "the first run";
      return false;
    }
    blocks_ = KvBlockPool(static_cast<int32_t>(blocks));
    return true;
  }
  // A NUMA node is host memory that the tier is bound to.
  std::optional<HostNode> node;
  if (space.rfind("numa", 0) == 0) {
    std::string cause;
    node = hostNodeNamed(space, cause);
    if (!node) {
      error = "--kv-budget " + space + ": " + cause;
      return false;
    }
    if (bytes > node->capacityBytes / 2) {
      error = "--kv-budget " + space + "=" + std::to_string(bytes) +
              ": more than half of " + space + "'s " +
              std::to_string(node->capacityBytes) +
              " bytes; give at most " +
              std::to_string(node->capacityBytes / 2);
      return false;
    }
  } else if (space != "host" && space != "disk") {
    error = "--kv-budget " + space +
            ": the KV cache's memories are pool, host (or one of the host's "
            "NUMA nodes, numa<N>, to hold the host tier there) and disk";
    return false;
  }
  if (anySwapped) {
    error = "--kv-budget " + space +
            ": blocks are moved out already; set the tiers' budgets before "
            "the first run";
    return false;
  }
  if (node)
    hostNode_ = node;
  (space == "disk" ? diskBudget_ : hostBudget_) = blocks;
  if (!directory.empty())
    swapDirectory_ = directory;
  resetTiers();
  return true;
}

bool KvCache::prepareBlocks(SequenceId id, KvSequence &sequence,
                            int64_t count, std::string &error) {
  int64_t first = sequence.length() / blockSize_;
  int64_t last = (sequence.length() + count - 1) / blockSize_;
  int64_t needed = blocksToWrite(sequence, count);
  // Other sequences' blocks are counted only when the free ones fall short.
  int64_t available = blocks_.freeBlocks();
  if (needed > available)
    available += movableBlocks(id);
  if (needed > available) {
    failure_ = Failure::OutOfMemory;
    error = "the KV pool is full: " + std::to_string(count) +
            (count == 1 ? " more token needs " : " more tokens need ") +
            std::to_string(needed) + (needed == 1 ? " block of " : " blocks of ") +
            std::to_string(blockSize_) + " positions and " +
            std::to_string(available) + " of " +
            std::to_string(blocks_.blocks()) +
            " are free or can move to another memory; remove sequences, "
            "or compile with a larger --context";
    return false;
  }
  for (int64_t index = first; index <= last; ++index) {
    if (index >= static_cast<int64_t>(sequence.table.size())) {
      std::optional<int32_t> block = allocateBlock(id, error);
      if (!block)
        return false;
      sequence.table.push_back(*block);
      sequence.swapped.emplace_back();
      continue;
    }
    int32_t &block = sequence.table[static_cast<size_t>(index)];
    if (blocks_.references(block) == 1) {
      // Written in place: what the cache found under its hash changes.
      blocks_.unpublish(block);
      continue;
    }
    std::optional<int32_t> copy = allocateBlock(id, error);
    if (!copy)
      return false;
    if (!store_.copyBlock(block, *copy, error)) {
      failure_ = Failure::Io;
      blocks_.release(*copy);
      return false;
    }
    blocks_.release(block);
    block = *copy;
    ++copiedBlocks_;
  }
  return true;
}

KvSequence *KvCache::find(SequenceId id, int64_t count, std::string &error) {
  failure_ = Failure::InvalidInput;
  auto found = sequences_.find(id);
  if (found == sequences_.end()) {
    error = "there is no sequence " + std::to_string(id) +
            " (it was removed, or never created)";
    return nullptr;
  }
  int64_t start = found->second.length();
  if (start + count > contextLength_) {
    error = "the context is full: " + std::to_string(start) + " + " +
            std::to_string(count) + " tokens exceed the context length " +
            std::to_string(contextLength_) +
            " (compile with a larger --context)";
    return nullptr;
  }
  return &found->second;
}

KvSequence *KvCache::findRun(SequenceId id, const int32_t *ids, int64_t count,
                             int64_t vocab, std::string &error) {
  KvSequence *found = find(id, count, error);
  if (!found)
    return nullptr;
  for (int64_t i = 0; i < count; ++i)
    if (ids[i] < 0 || ids[i] >= vocab) {
      error = "token id " + std::to_string(ids[i]) +
              " is outside the vocabulary [0, " + std::to_string(vocab) + ")";
      return nullptr;
    }
  return found;
}

bool KvCache::findBatch(const std::vector<SequenceId> &sequences,
                        const std::vector<int32_t> &ids, int64_t vocab,
                        std::vector<KvSequence *> &members,
                        std::string &error) {
  members.clear();
  if (sequences.empty() || sequences.size() != ids.size()) {
    error = "a batch needs one id per sequence and at least one sequence (" +
            std::to_string(sequences.size()) + " sequences, " +
            std::to_string(ids.size()) + " ids)";
    return false;
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    if (std::count(sequences.begin(), sequences.end(), sequences[i]) > 1) {
      error = "sequence " + std::to_string(sequences[i]) +
              " is in the batch twice; a batch decodes one token of each";
      return false;
    }
    KvSequence *member = findRun(sequences[i], &ids[i], 1, vocab, error);
    if (!member)
      return false;
    members.push_back(member);
  }
  return true;
}

bool KvCache::prepare(SequenceId id, KvSequence &sequence, int64_t count,
                      std::string &error) {
  sequence.lastRun = ++runs_;
  return makeResident(id, sequence, error) &&
         prepareBlocks(id, sequence, count, error);
}

bool KvCache::inBatch(SequenceId id) const {
  return std::find(batch_.begin(), batch_.end(), id) != batch_.end();
}

bool KvCache::prepareBatch(const std::vector<SequenceId> &ids,
                           const std::vector<KvSequence *> &members,
                           std::vector<int32_t> &tables, size_t &width,
                           std::string &error, size_t rowWidth) {
  // Every member's blocks must be in the pool at once: none gives up its
  // blocks for another's.
  batch_ = ids;
  struct ClearBatch {
    std::vector<SequenceId> &batch;
    ~ClearBatch() { batch.clear(); }
  } clearBatch{batch_};
  int64_t needed = 0;
  for (KvSequence *member : members) {
    member->lastRun = ++runs_;
    needed += std::count(member->table.begin(), member->table.end(), -1) +
              blocksToWrite(*member, 1);
  }
  if (needed > blocks_.freeBlocks() + movableBlocks(-1)) {
    failure_ = Failure::OutOfMemory;
    error = "the KV pool is full: the batch of " +
            std::to_string(ids.size()) + " sequences needs " +
            std::to_string(needed) +
            (needed == 1 ? " more block of " : " more blocks of ") +
            std::to_string(blockSize_) + " positions in the pool at once; " +
            "decode fewer sequences together, or compile with a larger "
            "--context";
    return false;
  }
  width = rowWidth;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!makeResident(ids[i], *members[i], error) ||
        !prepareBlocks(ids[i], *members[i], 1, error))
      return false;
    if (rowWidth == 0)
      width = std::max(width, members[i]->table.size());
  }
  // Each row is a sequence's table; what is past its blocks is never read.
  tables.assign(members.size() * width, 0);
  for (size_t i = 0; i < members.size(); ++i)
    std::copy(members[i]->table.begin(), members[i]->table.end(),
              tables.begin() + static_cast<long>(i * width));
  return true;
}

void KvCache::publishBlocks(KvSequence &sequence) {
  size_t block = static_cast<size_t>(blockSize_);
  for (size_t index = sequence.hashes.size();
       index < sequence.tokens.size() / block; ++index) {
    uint64_t previous = index == 0 ? 0 : sequence.hashes[index - 1];
    const int32_t *tokens = sequence.tokens.data() + index * block;
    uint64_t hash = kvBlockHash(previous, tokens, block);
    sequence.hashes.push_back(hash);
    if (prefixCaching_)
      blocks_.publish(sequence.table[index], hash, previous, tokens, block);
  }
}

int64_t KvCache::reusePrefix(KvSequence &sequence, const int32_t *ids,
                             int64_t count) {
  size_t block = static_cast<size_t>(blockSize_);
  // Only a sequence that ends on a whole block continues with cached ones,
  // and the last id always runs: its logits are the result.
  if (!prefixCaching_ || sequence.tokens.size() % block != 0 ||
      sequence.hashes.size() != sequence.tokens.size() / block)
    return 0;
  int64_t reused = 0;
  while (count - reused > blockSize_) {
    uint64_t previous = sequence.hashes.empty() ? 0 : sequence.hashes.back();
    const int32_t *tokens = ids + reused;
    uint64_t hash = kvBlockHash(previous, tokens, block);
    std::optional<int32_t> found =
        blocks_.lookup(hash, previous, tokens, block);
    if (!found)
      break;
    sequence.table.push_back(*found);
    sequence.swapped.emplace_back();
    sequence.tokens.insert(sequence.tokens.end(), tokens, tokens + block);
    sequence.hashes.push_back(hash);
    reused += blockSize_;
  }
  return reused;
}

void KvCache::dropReused(KvSequence &sequence, size_t blocksBefore,
                         int64_t reused) {
  if (reused == 0)
    return;
  for (size_t i = blocksBefore; i < sequence.table.size(); ++i)
    blocks_.release(sequence.table[i]);
  sequence.table.resize(blocksBefore);
  sequence.swapped.resize(blocksBefore);
  sequence.tokens.resize(sequence.tokens.size() - static_cast<size_t>(reused));
  sequence.hashes.resize(sequence.tokens.size() /
                         static_cast<size_t>(blockSize_));
}

std::string hostMemorySpace() {
  const hal::DeviceInfo &cpu = hal::enumerateDevices().front()->info();
  return cpu.name + "." + cpu.memories.at(0).name;
}

void addKvSpaces(const KvUsage &usage,
                 const std::vector<std::pair<std::string, uint64_t>> &poolShares,
                 std::vector<MemorySpaceStats> &spaces) {
  const hal::DeviceInfo &cpu = hal::enumerateDevices().front()->info();
  // The host tier's space: host memory, or the NUMA node it is bound to.
  const std::string host =
      usage.hostTierNode.empty() ? hostMemorySpace()
                                 : cpu.name + "." + usage.hostTierNode;
  auto spaceNamed = [&](const std::string &name) -> MemorySpaceStats & {
    for (MemorySpaceStats &space : spaces)
      if (space.name == name)
        return space;
    MemorySpaceStats space;
    space.name = name;
    for (const hal::MemorySpaceInfo &memory : cpu.memories)
      if (name == cpu.name + "." + memory.name) {
        space.device = cpu.name;
        space.capacityBytes = memory.capacityBytes;
      }
    spaces.push_back(std::move(space));
    return spaces.back();
  };
  const KvSwapStats &swaps = usage.swaps;
  uint64_t out = static_cast<uint64_t>(swaps.toHost + swaps.toDisk);
  uint64_t in = static_cast<uint64_t>(swaps.fromHost + swaps.fromDisk);
  for (const auto &[name, blockBytes] : poolShares) {
    MemorySpaceStats &pool = spaceNamed(name);
    pool.migrationsOut += out;
    pool.bytesOut += out * blockBytes;
    pool.migrationsIn += in;
    pool.bytesIn += in * blockBytes;
  }
  uint64_t block = static_cast<uint64_t>(usage.blockBytes);
  for (auto [name, held, to, from] :
       {std::tuple{host, swaps.hostBytes, swaps.toHost, swaps.fromHost},
        std::tuple{std::string("disk"), swaps.diskBytes, swaps.toDisk,
                   swaps.fromDisk}}) {
    // A disk tier appears once a budget gave it blocks.
    if (held == 0 && to == 0 && name == "disk")
      continue;
    MemorySpaceStats &tier = spaceNamed(name);
    tier.heldBytes[static_cast<size_t>(MemoryRole::KvTier)] +=
        static_cast<uint64_t>(held);
    tier.peakBytes = std::max(tier.peakBytes, tier.held());
    tier.migrationsIn += static_cast<uint64_t>(to);
    tier.bytesIn += static_cast<uint64_t>(to) * block;
    tier.migrationsOut += static_cast<uint64_t>(from);
    tier.bytesOut += static_cast<uint64_t>(from) * block;
  }
}

} // namespace hetrt::core
