// A paged KV cache's sequences over one pool of blocks, wherever the pool
// lives: each sequence is a block table over the pool, blocks are shared by
// forks and by the prefix cache (copied before a shared block is written),
// and when the pool is full the blocks of the sequence that ran longest ago
// move out to host memory and disk (KvSwapSpace) and come back before it
// runs again. The bytes of the blocks are the KvBlockStore's: the CPU
// session's caches in host memory, or a device's buffers that a program
// reads, so one policy serves every target.
#ifndef HETRT_CORE_KVCACHE_H
#define HETRT_CORE_KVCACHE_H

#include "runtime/core/Failure.h"
#include "runtime/core/KvBlocks.h"
#include "runtime/core/KvSwap.h"
#include "runtime/core/MemorySpaces.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::core {

/// How a cache's pool is used.
struct KvUsage {
  int64_t blockSize = 0;
  int64_t blocks = 0;
  int64_t freeBlocks = 0;
  /// Blocks more than one sequence holds.
  int64_t sharedBlocks = 0;
  /// Shared blocks copied because a sequence wrote to them.
  int64_t copiedBlocks = 0;
  /// Blocks the prefix cache can find by their tokens.
  int64_t cachedBlocks = 0;
  /// Cached blocks nobody held that the pool took back for new positions.
  int64_t evictedBlocks = 0;
  /// Prompt tokens whose keys and values came from the prefix cache
  /// instead of being computed.
  int64_t reusedTokens = 0;
  /// Bytes of one block: every layer's keys and values of its positions.
  int64_t blockBytes = 0;
  /// Blocks moved out of the pool to host memory and to disk, and back.
  KvSwapStats swaps;
  /// Blocks the host and disk tiers may hold (host: INT64_MAX / 4 when
  /// unbounded).
  int64_t hostBudgetBlocks = 0;
  /// The NUMA node the host tier is bound to ("numa1"; "" when host memory
  /// is the system's to choose).
  std::string hostTierNode;
  /// Whether the tiers keep blocks as int8 rows (KvTierFormat::Int8).
  bool tiersInt8 = false;
  /// Bytes one block takes in the host and disk tiers.
  int64_t tierBlockBytes = 0;
  int64_t diskBudgetBlocks = 0;
};

/// The name of host memory's space: the CPU device's memory.
std::string hostMemorySpace();

/// Adds the cache's tiers to `spaces`: host memory and "disk", with the
/// bytes they hold, and the blocks moved out of the pool and back as
/// migrations. The pool's blocks lie in the spaces of `poolShares`, each
/// with the bytes of a block it holds (a plan may keep some layers'
/// caches on one device and the rest on another).
void addKvSpaces(const KvUsage &usage,
                 const std::vector<std::pair<std::string, uint64_t>> &poolShares,
                 std::vector<MemorySpaceStats> &spaces);

/// The bytes of the pool's blocks. A block is every layer's keys and values
/// of its positions; gathered, it is blockBytes() bytes in the store's own
/// order, which scatterBlock takes back.
class KvBlockStore {
public:
  virtual ~KvBlockStore() = default;
  virtual size_t blockBytes() const = 0;
  /// How a gathered block divides into rows of one head's elements (for
  /// the compressed tiers).
  virtual KvBlockRows blockRows() const = 0;
  virtual bool gatherBlock(int32_t block, std::byte *out,
                           std::string &error) = 0;
  virtual bool scatterBlock(const std::byte *in, int32_t block,
                            std::string &error) = 0;
  /// Copies block `from` to block `to`.
  virtual bool copyBlock(int32_t from, int32_t to, std::string &error) = 0;
};

/// Not thread-safe. Starts with one empty sequence, kDefaultSequence.
class KvCache {
public:
  using SequenceId = int32_t;
  static constexpr SequenceId kDefaultSequence = 0;

  /// A pool of `poolBlocks` blocks of `blockSize` positions in `store`
  /// (which must outlive the cache), for sequences of at most
  /// `contextLength` positions.
  KvCache(KvBlockStore &store, int32_t poolBlocks, int64_t blockSize,
          int64_t contextLength);

  /// A new, empty sequence.
  SequenceId createSequence();
  /// A new sequence holding the first `tokens` positions of `from`, sharing
  /// their blocks. False with `error` when `from` does not exist or holds
  /// fewer positions.
  bool forkSequence(SequenceId from, int64_t tokens, SequenceId &forked,
                    std::string &error);
  /// Frees the sequence's blocks (those it alone holds).
  bool removeSequence(SequenceId sequence, std::string &error);
  bool hasSequence(SequenceId sequence) const {
    return sequences_.count(sequence) > 0;
  }
  /// Positions `sequence` holds (0 for one that does not exist).
  int64_t position(SequenceId sequence) const;
  /// Forgets the default sequence's tokens (and creates it again if it was
  /// removed).
  void reset();
  KvUsage usage() const;
  int64_t blockSize() const { return blockSize_; }
  int64_t contextLength() const { return contextLength_; }
  /// The kind of the last failure: OutOfMemory when the pool or the tiers
  /// had no room, Io when the disk tier or the store failed, InvalidInput
  /// otherwise.
  Failure lastFailure() const { return failure_; }

  /// Whether a prefill takes the blocks of a prompt's prefix that an
  /// earlier sequence computed (on by default).
  void setPrefixCaching(bool enabled) { prefixCaching_ = enabled; }
  /// Bytes a memory may hold, in whole blocks: "pool" (at most the blocks
  /// the cache was made with; before any run), "host", "numa<N>" (the host
  /// tier, bound to that NUMA node; at most half of it) and "disk" (a file
  /// under `directory`; none by default). The host tier starts on the
  /// host's memory-only node where it has one (coldestHostNode).
  bool setBudget(const std::string &space, uint64_t bytes, std::string &error,
                 const std::string &directory = "");
  /// How the host and disk tiers keep blocks; before any block moved out.
  bool setTierFormat(KvTierFormat format, std::string &error);

  // A run of the model code on a sequence, in three parts: find() the
  // sequence, prepare() its blocks, and once the code wrote the positions,
  // append the ids to its tokens and publishBlocks().

  /// The sequence, if it exists and `count` more positions fit the
  /// context; null with `error` otherwise.
  KvSequence *find(SequenceId id, int64_t count, std::string &error);
  /// find() for a run of `ids`, each of which must be a token of a
  /// vocabulary of `vocab`.
  KvSequence *findRun(SequenceId id, const int32_t *ids, int64_t count,
                      int64_t vocab, std::string &error);
  /// findRun() of one id for each member of a batch, which must name each
  /// sequence once; then `members` holds them in order.
  bool findBatch(const std::vector<SequenceId> &sequences,
                 const std::vector<int32_t> &ids, int64_t vocab,
                 std::vector<KvSequence *> &members, std::string &error);
  /// Appends to `sequence` the cached blocks that hold the next whole
  /// blocks of `ids`, leaving at least the last id to run; the ids reused.
  int64_t reusePrefix(KvSequence &sequence, const int32_t *ids, int64_t count);
  /// Gives back what reusePrefix took when the run after it never ran: the
  /// table past `blocksBefore` and the last `reused` ids.
  void dropReused(KvSequence &sequence, size_t blocksBefore, int64_t reused);
  /// Brings the sequence's moved-out blocks back and gives it writable
  /// blocks for positions [length, length + count): new ones past its
  /// table, copies of shared ones. Changes nothing when the pool cannot
  /// hold them.
  bool prepare(SequenceId id, KvSequence &sequence, int64_t count,
               std::string &error);
  /// prepare() of one position for each of `members` (the sequences
  /// `ids`), with every member's blocks in the pool at once; then `tables`
  /// holds a table row of `width` entries per member: `rowWidth` where
  /// given (the code reads rows of the pool's size), else the longest
  /// table's.
  bool prepareBatch(const std::vector<SequenceId> &ids,
                    const std::vector<KvSequence *> &members,
                    std::vector<int32_t> &tables, size_t &width,
                    std::string &error, size_t rowWidth = 0);
  /// Hashes the sequence's newly whole blocks and publishes them.
  void publishBlocks(KvSequence &sequence);
  /// Counts prompt tokens a prefill took from the prefix cache.
  void countReused(int64_t tokens) { reusedTokens_ += tokens; }

private:
  /// The tiers anew, empty, with the budgets, directory and format set.
  void resetTiers();
  bool anyBlockMovedOut() const;
  /// Blocks a run of `count` more ids takes from the pool: new ones past
  /// the sequence's table, and copies of shared ones it writes.
  int64_t blocksToWrite(const KvSequence &sequence, int64_t count) const;
  /// Blocks the pool can get back by moving other sequences' out.
  int64_t movableBlocks(SequenceId running) const;
  /// A block for `running`: a free one, else one the pool gets back by
  /// moving out a block of the sequence that ran longest ago.
  std::optional<int32_t> allocateBlock(SequenceId running, std::string &error);
  bool makeResident(SequenceId id, KvSequence &sequence, std::string &error);
  bool prepareBlocks(SequenceId id, KvSequence &sequence, int64_t count,
                     std::string &error);
  /// Whether `id` is in the batch being prepared, whose blocks stay in the
  /// pool.
  bool inBatch(SequenceId id) const;

  KvBlockStore &store_;
  KvBlockPool blocks_;
  int32_t compiledBlocks_;
  int64_t blockSize_;
  int64_t contextLength_;
  std::map<SequenceId, KvSequence> sequences_;
  SequenceId nextSequence_ = kDefaultSequence + 1;
  int64_t copiedBlocks_ = 0;
  int64_t reusedTokens_ = 0;
  bool prefixCaching_ = true;
  std::unique_ptr<KvSwapSpace> swap_;
  /// Blocks the tiers may hold: host memory without a bound (memory runs
  /// out first), no disk until a budget is given.
  int64_t hostBudget_ = INT64_MAX / 4;
  int64_t diskBudget_ = 0;
  std::string swapDirectory_;
  std::optional<HostNode> hostNode_;
  KvTierFormat tierFormat_ = KvTierFormat::Exact;
  std::vector<std::byte> blockBuffer_;
  uint64_t runs_ = 0;
  std::vector<SequenceId> batch_;
  Failure failure_ = Failure::InvalidInput;
};

} // namespace hetrt::core

#endif // HETRT_CORE_KVCACHE_H
