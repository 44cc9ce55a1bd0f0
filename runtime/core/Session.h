// Generation over a model: its paged KV cache (a pool of blocks per layer),
// the sequences whose positions are in it, and the logits of the last run.
#ifndef HETRT_CORE_SESSION_H
#define HETRT_CORE_SESSION_H

#include "runtime/core/KvBlocks.h"
#include "runtime/core/Model.h"
#include "runtime/core/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::core {

/// How a session's KV pool is used.
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
};

/// Not thread-safe; a model may serve many sessions at once. A session
/// starts with one empty sequence, kDefaultSequence, which the calls without
/// a sequence use.
class Session {
public:
  using SequenceId = int32_t;
  static constexpr SequenceId kDefaultSequence = 0;

  /// Allocates the KV cache for the model's context length and starts
  /// `numThreads` threads (0: one per core) for the kernels. `model` must
  /// outlive the session. Returns null and sets `error` when the thread count
  /// is outside [0, kMaxThreads], the cache does not fit the memory available
  /// or the threads cannot be started; never throws.
  static std::unique_ptr<Session> create(const Model &model, int64_t numThreads,
                                         std::string &error);
  /// As above, and sets `failure` to the kind of the failure.
  static std::unique_ptr<Session> create(const Model &model, int64_t numThreads,
                                         std::string &error, Failure &failure);

  int numThreads() const { return pool_.numThreads(); }

  /// Runs `ids` through the model from the current position (prompt
  /// processing). Returns false and sets `error` when an id is outside the
  /// vocabulary or the context would overflow (the session is unchanged
  /// then), or when the logits come out non-finite (the tokens are in the
  /// cache then; the error names the first layer whose weights hold a NaN or
  /// an infinity).
  bool prefill(const std::vector<int32_t> &ids, std::string &error) {
    return prefill(kDefaultSequence, ids, error);
  }
  /// Runs one token (generation); same failures as prefill.
  bool decode(int32_t id, std::string &error) {
    return decode(kDefaultSequence, id, error);
  }
  /// As above, on `sequence`; also fails, changing nothing, when the
  /// sequence does not exist or the pool has no free block for its new
  /// positions.
  bool prefill(SequenceId sequence, const std::vector<int32_t> &ids,
               std::string &error);
  bool decode(SequenceId sequence, int32_t id, std::string &error);

  /// One decode step of several sequences at once, one id each, in one
  /// call of the code (their weights are read once for all). Fails before
  /// running anything as decode does for any of them, for a sequence given
  /// twice, or when the pool cannot hold every one's blocks at once. Then
  /// logits(i) is the i-th sequence's.
  bool decodeBatch(const std::vector<SequenceId> &sequences,
                   const std::vector<int32_t> &ids, std::string &error);
  /// The logits of the i-th token of the last run: of a batch's i-th
  /// sequence (logits() is the first).
  const float *logits(size_t i) const {
    return logits_.data() + i * static_cast<size_t>(vocabSize());
  }

  /// A new, empty sequence.
  SequenceId createSequence();
  /// A new sequence holding the first `tokens` positions of `from`, sharing
  /// their blocks (the first write to a shared block copies it). False
  /// with `error` when `from` does not exist or holds fewer positions.
  bool forkSequence(SequenceId from, int64_t tokens, SequenceId &forked,
                    std::string &error);
  /// Frees the sequence's blocks (those it alone holds). False with `error`
  /// when it does not exist.
  bool removeSequence(SequenceId sequence, std::string &error);
  bool hasSequence(SequenceId sequence) const {
    return sequences_.count(sequence) > 0;
  }
  /// Positions `sequence` holds (0 for one that does not exist).
  int64_t position(SequenceId sequence) const;
  KvUsage kvUsage() const;
  /// The kind of the last failed run's failure: OutOfMemory when the pool
  /// or the tiers had no room, Io when the disk tier failed, InvalidInput
  /// otherwise.
  Failure lastFailure() const { return failure_; }
  /// Whether prefill takes the blocks of a prompt's prefix that an earlier
  /// sequence computed (on by default). Tokens are the same either way.
  void setPrefixCaching(bool enabled) { prefixCaching_ = enabled; }
  /// Bytes a memory may hold of the KV cache, in whole blocks: "pool" (the
  /// pool the code reads; at most the compiled one, set before any run),
  /// "host" (blocks moved out of the pool, unbounded by default) and "disk"
  /// (a file under `directory` once host memory is full; none by default).
  /// When the pool is full, the blocks of the sequence that ran longest ago
  /// move out, and come back before it runs again. False with `error` for
  /// another space, a pool of no block, or tiers that hold blocks already.
  bool setKvBudget(const std::string &space, uint64_t bytes,
                   std::string &error, const std::string &directory = "");
  /// How the host and disk tiers keep blocks: exact (the default) or int8
  /// with a scale per row, which changes the keys and values that come
  /// back. False with `error` once blocks were moved out.
  bool setKvTierFormat(KvTierFormat format, std::string &error);

  /// Logits of the last token run, `vocabSize()` values.
  const float *logits() const { return logits_.data(); }
  int64_t vocabSize() const { return model_.manifest().vocabSize; }
  /// Positions of the default sequence.
  int64_t position() const { return position(kDefaultSequence); }
  int64_t contextLength() const { return model_.manifest().contextLength; }
  /// Times every kernel dispatch into `profile` from now on (null stops
  /// timing); `profile` must outlive the session or the next call.
  void profileDispatches(DispatchProfile *profile) {
    runtimeInterface_ = makeRuntimeInterface(pool_, profile);
  }
  /// Forgets the default sequence's tokens, freeing its blocks (and creates
  /// it again if it was removed).
  void reset();

  /// Whether decode steps choose, by measuring, between every thread and the
  /// calling thread alone (on by default; see DecodeThreading). Prefill always
  /// uses every thread.
  void setDecodeThreadChoice(bool enabled) {
    choiceEnabled_ = enabled;
    pool_.setParallel(true);
  }
  /// Whether the last decode step ran on every thread.
  bool decodeRanInParallel() const { return pool_.parallel(); }

private:
  Session(const Model &model, int numThreads);
  bool run(SequenceId sequence, cpu::EntryFunction entry, const int32_t *ids,
           int64_t count, std::string &error);
  /// The sequence, if it exists and `count` more ids fit its context and
  /// the vocabulary; null with `error` otherwise.
  KvSequence *checkRun(SequenceId sequence, const int32_t *ids, int64_t count,
                       std::string &error);
  /// Appends to `sequence` the cached blocks that hold the next whole
  /// blocks of `ids`, leaving at least the last id to run; the ids reused.
  int64_t reusePrefix(KvSequence &sequence, const int32_t *ids,
                      int64_t count);
  /// Hashes the sequence's newly whole blocks and publishes them.
  void publishBlocks(KvSequence &sequence);
  /// Gives `sequence` writable blocks for positions [length, length +
  /// count): new blocks past its table, copies of shared ones. Changes
  /// nothing and fails when the pool has too few free blocks.
  bool prepareBlocks(SequenceId id, KvSequence &sequence, int64_t count,
                     std::string &error);
  size_t blockBytes() const;
  /// Copies block `from` to block `to` in every layer's pool.
  void copyBlock(int32_t from, int32_t to);
  /// Runs of a block's rows (one per layer, keys or values, and head), and
  /// where run `run` of `block` starts.
  size_t blockRuns() const;
  std::byte *blockRun(int32_t block, size_t run) const;
  /// Blocks a run of `count` more ids takes from the pool: new ones past
  /// the sequence's table, and copies of shared ones it writes.
  int64_t blocksToWrite(const KvSequence &sequence, int64_t count) const;
  /// A block's bytes in every layer's pool, to and from one buffer.
  void gatherBlock(int32_t block, std::byte *out) const;
  void scatterBlock(const std::byte *in, int32_t block);
  /// A block for `running`: a free one, else one the pool gets back by
  /// moving out a block of the sequence that ran longest ago.
  std::optional<int32_t> allocateBlock(SequenceId running, std::string &error);
  /// Blocks the pool can get back by moving other sequences' out.
  int64_t movableBlocks(SequenceId running) const;
  /// Brings the sequence's moved-out blocks back into the pool.
  bool makeResident(SequenceId id, KvSequence &sequence, std::string &error);
  /// The tiers anew, empty, with the budgets, directory and format set.
  void resetTiers();
  bool anyBlockMovedOut() const;
  /// Calls the model code on `count` ids at positions_: `tables` is the
  /// block tables' memref descriptor, and `logitRows` rows of logits come
  /// back in logits_.
  void callModel(cpu::EntryFunction entry, const int32_t *ids, int64_t count,
                 void *tables, int64_t logitRows);
  /// Whether `id` is in the batch being run, whose blocks stay in the pool.
  bool inBatch(SequenceId id) const;
  /// Why the logits are not finite: the first weight tensor, in forward
  /// order, holding a non-finite value.
  std::string describeNonFiniteLogits() const;

  const Model &model_;
  ThreadPool pool_;
  CpuRuntimeInterface runtimeInterface_;
  /// One KV cache per layer, of the manifest's element type, on a cache
  /// line boundary.
  struct CacheDeleter {
    void operator()(std::byte *data) const;
  };
  std::vector<std::unique_ptr<std::byte[], CacheDeleter>> caches_;
  KvBlockPool blocks_;
  int64_t blockSize_;
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
  KvTierFormat tierFormat_ = KvTierFormat::Exact;
  std::vector<std::byte> blockBuffer_;
  uint64_t runs_ = 0;
  /// The sequences of the batch being run, and its block tables.
  std::vector<SequenceId> batch_;
  Failure failure_ = Failure::InvalidInput;
  std::vector<int32_t> tables_;
  std::vector<float> logits_;
  std::vector<int32_t> positions_;
  /// The position of the last token run, for messages.
  int64_t lastPosition_ = 0;
  /// Decode thread choice: over each window of steps, a few are timed on
  /// every thread and a few on one, and the rest run the faster way.
  bool choiceEnabled_ = true;
  int64_t choiceStep_ = 0;
  double parallelSeconds_ = 0;
  double serialSeconds_ = 0;
  bool chosenParallel_ = true;
};

} // namespace hetrt::core

#endif // HETRT_CORE_SESSION_H
