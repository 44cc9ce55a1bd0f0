// Generation over a model: its paged KV cache (a pool of blocks per layer),
// the sequences whose positions are in it, and the logits of the last run.
#ifndef HETRT_CORE_SESSION_H
#define HETRT_CORE_SESSION_H

#include "runtime/core/KvCache.h"
#include "runtime/core/Model.h"
#include "runtime/core/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::core {

/// Not thread-safe; a model may serve many sessions at once. A session
/// starts with one empty sequence, kDefaultSequence, which the calls without
/// a sequence use.
class Session : private KvBlockStore {
public:
  using SequenceId = KvCache::SequenceId;
  static constexpr SequenceId kDefaultSequence = KvCache::kDefaultSequence;

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

  /// The sequences and their blocks (create, fork, remove, positions,
  /// budgets of the pool and the tiers, prefix caching; see KvCache). The
  /// first write to a block a fork shares copies it; when the pool is
  /// full, the blocks of the sequence that ran longest ago move out to
  /// host memory and disk, and come back before it runs again.
  KvCache &kvCache() { return *kv_; }
  const KvCache &kvCache() const { return *kv_; }
  SequenceId createSequence() { return kv_->createSequence(); }
  bool forkSequence(SequenceId from, int64_t tokens, SequenceId &forked,
                    std::string &error) {
    return kv_->forkSequence(from, tokens, forked, error);
  }
  bool removeSequence(SequenceId sequence, std::string &error) {
    return kv_->removeSequence(sequence, error);
  }
  bool hasSequence(SequenceId sequence) const {
    return kv_->hasSequence(sequence);
  }
  int64_t position(SequenceId sequence) const {
    return kv_->position(sequence);
  }
  KvUsage kvUsage() const { return kv_->usage(); }
  /// Host memory holding the caches' pool, and the cache's tiers.
  std::vector<MemorySpaceStats> memorySpaces() const;
  /// The kind of the last failed run's failure (KvCache::lastFailure).
  Failure lastFailure() const { return kv_->lastFailure(); }
  void setPrefixCaching(bool enabled) { kv_->setPrefixCaching(enabled); }
  bool setKvBudget(const std::string &space, uint64_t bytes,
                   std::string &error, const std::string &directory = "") {
    return kv_->setBudget(space, bytes, error, directory);
  }
  bool setKvTierFormat(KvTierFormat format, std::string &error) {
    return kv_->setTierFormat(format, error);
  }

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
  void reset() { kv_->reset(); }

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
  // The caches as the KV cache's block store: a block's bytes in every
  // layer's pool, gathered into one buffer and back.
  size_t blockBytes() const override;
  KvBlockRows blockRows() const override;
  bool gatherBlock(int32_t block, std::byte *out, std::string &) override;
  bool scatterBlock(const std::byte *in, int32_t block,
                    std::string &) override;
  bool copyBlock(int32_t from, int32_t to, std::string &) override;
  /// Runs of a block's rows (one per layer, keys or values, and head), and
  /// where run `run` of `block` starts.
  size_t blockRuns() const;
  std::byte *blockRun(int32_t block, size_t run) const;
  /// Calls the model code on `count` ids at positions_: `tables` is the
  /// block tables' memref descriptor, and `logitRows` rows of logits come
  /// back in logits_.
  void callModel(cpu::EntryFunction entry, const int32_t *ids, int64_t count,
                 void *tables, int64_t logitRows);
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
  int64_t blockSize_;
  std::unique_ptr<KvCache> kv_;
  /// The block tables of the batch being run.
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
