// One generation stream over a model: its KV cache, position and logits.
#ifndef HETRT_CORE_SESSION_H
#define HETRT_CORE_SESSION_H

#include "runtime/core/Model.h"
#include "runtime/core/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::core {

/// Not thread-safe; a model may serve many sessions at once.
class Session {
public:
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
  bool prefill(const std::vector<int32_t> &ids, std::string &error);
  /// Runs one token (generation); same failures as prefill.
  bool decode(int32_t id, std::string &error);

  /// Logits of the last token run, `vocabSize()` values.
  const float *logits() const { return logits_.data(); }
  int64_t vocabSize() const { return model_.manifest().vocabSize; }
  /// Tokens in the KV cache.
  int64_t position() const { return position_; }
  int64_t contextLength() const { return model_.manifest().contextLength; }
  /// Times every kernel dispatch into `profile` from now on (null stops
  /// timing); `profile` must outlive the session or the next call.
  void profileDispatches(DispatchProfile *profile) {
    runtimeInterface_ = makeRuntimeInterface(pool_, profile);
  }
  /// Forgets every token (the cache is overwritten as positions are reused).
  void reset() { position_ = 0; }

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
  bool run(cpu::EntryFunction entry, const int32_t *ids, int64_t count,
           std::string &error);
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
  std::vector<float> logits_;
  std::vector<int32_t> positions_;
  int64_t position_ = 0;
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
