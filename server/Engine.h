// Continuous batching on the CPU control plane: requests join the running
// batch at any decode step and leave it the step they finish. Each step
// gives the oldest requests still reading their prompt a bounded chunk of
// prefill, then decodes every running request's next token in one call of
// the session's batched entry point. One thread owns the session; clients
// talk to it through their Generation.
#ifndef HETC_SERVER_ENGINE_H
#define HETC_SERVER_ENGINE_H

#include "server/Metrics.h"

#include "hetrt/hetrt.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hetc::server {

struct SamplingOptions {
  /// 0: greedy (ties to the lowest id).
  float temperature = 1.0f;
  /// 0: all tokens.
  int32_t topK = 0;
  float topP = 1.0f;
  float repeatPenalty = 1.0f;
  uint64_t seed = 0;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  /// At most this many tokens; the end of the context stops it earlier.
  int64_t maxTokens = 1;
  SamplingOptions sampling;
  std::vector<std::string> stop;
  bool ignoreEos = false;
  /// Log-probabilities of each token and of this many alternatives; -1:
  /// none.
  int32_t topLogprobs = -1;
};

struct TokenLogprob {
  std::string piece;
  float logprob = 0;
};

struct TokenOutput {
  int32_t id = 0;
  std::string piece;
  /// With GenerationRequest::topLogprobs >= 0.
  float logprob = 0;
  std::vector<TokenLogprob> top;
};

/// What happened since the client last looked.
struct GenerationUpdate {
  /// Text now safe to show (TextStream).
  std::string text;
  std::vector<TokenOutput> tokens;
  bool finished = false;
  /// "stop" (end of generation or a stop string), "length" (max tokens or
  /// the context's end); set when finished without an error.
  std::string finishReason;
  /// Why the engine could not finish it.
  std::string error;
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
};

/// One request as its client sees it; shared with the engine.
class Generation {
public:
  /// Waits up to `timeout` for news: true, with everything since the last
  /// call moved into `update`, when there is some.
  bool wait(GenerationUpdate &update, std::chrono::milliseconds timeout);
  /// The client is gone or lost interest: the engine frees its sequence at
  /// its next step.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

private:
  friend class Engine;
  void publish(const std::string &text, std::vector<TokenOutput> tokens,
               int64_t completionTokens);
  void end(const std::string &reason, const std::string &error,
           int64_t completionTokens);

  std::mutex mutex_;
  std::condition_variable changed_;
  GenerationUpdate pending_;
  bool news_ = false;
  std::atomic<bool> cancelled_{false};
};

struct EngineOptions {
  /// Requests decoded together at most (the batch).
  int32_t parallel = 8;
  /// Requests waiting for a place in the batch at most; more are refused.
  int32_t maxQueued = 128;
  /// Prompt tokens prefilled per step at most, shared by the requests
  /// reading their prompts, so they never stall the running ones for long.
  int64_t prefillChunk = 256;
};

class Engine {
public:
  /// Runs requests on `session` (sequence 0 is left alone) over `model`;
  /// both outlive the engine.
  Engine(const hetrt::api::Model &model, hetrt::api::Session &session,
         EngineOptions options);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Queues a request: null with `why` set when the queue is full.
  std::shared_ptr<Generation> submit(GenerationRequest request,
                                     std::string &why);
  EngineMetrics metrics() const;
  /// Ends every request (with an error saying the server stops) and the
  /// engine's thread; submit() refuses from then on.
  void stop();
  const EngineOptions &options() const { return options_; }
  int64_t contextLength() const { return context_; }
  /// The positions the KV pool holds for all sequences together; a request
  /// needing more could never run (0: unknown).
  int64_t poolPositions() const { return poolPositions_; }

private:
  struct Active;
  void run();
  bool admit(Active &active);
  void prefillStep();
  void decodeStep();
  /// Samples `active`'s next token from `logits` and shows it; false when
  /// the request finished.
  bool emit(Active &active, const float *logits);
  void finish(Active &active, const std::string &reason,
              const std::string &error = "");
  /// Gives the pool back by returning the latest request to the queue's
  /// head (its tokens are computed again when it returns).
  bool preemptNewest();
  void dropFinished();
  void recordKvMetrics();

  const hetrt::api::Model &model_;
  hetrt::api::Session &session_;
  const EngineOptions options_;
  const int64_t context_;
  const int32_t vocabSize_;
  /// The session's largest batch (0: none).
  int64_t maxBatch_ = 0;
  int64_t poolPositions_ = 0;
  /// The session's count of reused prompt tokens when the engine began.
  int64_t reusedAtStart_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Active>> waiting_;
  bool stopping_ = false;
  EngineMetrics metrics_;

  /// The engine thread's own.
  std::vector<std::unique_ptr<Active>> running_;
  /// Decode steps run.
  uint64_t step_ = 0;
  /// A request went back to the queue for want of blocks; none joins the
  /// batch until one finishes.
  bool poolFull_ = false;
  std::thread thread_;
};

} // namespace hetc::server

#endif // HETC_SERVER_ENGINE_H
