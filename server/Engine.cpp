#include "server/Engine.h"

#include "server/TextStream.h"

#include <algorithm>
#include <malloc.h>
#include <cmath>
#include <numeric>

namespace hetc::server {

using Clock = std::chrono::steady_clock;

namespace {

/// Log-softmax of one row: each logit minus log-sum-exp.
float logSumExp(const float *logits, int32_t count) {
  float peak = *std::max_element(logits, logits + count);
  double sum = 0;
  for (int32_t i = 0; i < count; ++i)
    sum += std::exp(static_cast<double>(logits[i] - peak));
  return peak + static_cast<float>(std::log(sum));
}

} // namespace

bool Generation::wait(GenerationUpdate &update,
                      std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return news_; }))
    return false;
  update = std::move(pending_);
  // What stays true once said: the end, and the counts.
  pending_ = {};
  pending_.finished = update.finished;
  pending_.finishReason = update.finishReason;
  pending_.error = update.error;
  pending_.promptTokens = update.promptTokens;
  pending_.completionTokens = update.completionTokens;
  news_ = false;
  return true;
}

void Generation::publish(const std::string &text,
                         std::vector<TokenOutput> tokens,
                         int64_t completionTokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.text += text;
  for (TokenOutput &token : tokens)
    pending_.tokens.push_back(std::move(token));
  pending_.completionTokens = completionTokens;
  news_ = true;
  changed_.notify_all();
}

void Generation::end(const std::string &reason, const std::string &error,
                     int64_t completionTokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.finished = true;
  pending_.finishReason = reason;
  pending_.error = error;
  pending_.completionTokens = completionTokens;
  news_ = true;
  changed_.notify_all();
}

struct Engine::Active {
  std::shared_ptr<Generation> generation;
  GenerationRequest request;
  std::unique_ptr<hetrt::api::Sampler> sampler;
  std::unique_ptr<TextStream> text;
  int32_t sequence = -1;
  /// The prompt and every token sampled; the last one waits for its decode
  /// while `pendingToken`.
  std::vector<int32_t> history;
  bool pendingToken = false;
  /// Tokens of `history` in the sequence's cache.
  size_t cached = 0;
  int64_t generated = 0;
  Clock::time_point arrived;
  Clock::time_point lastToken;
  /// The decode step that last ran it.
  uint64_t decodedAt = 0;
  bool done = false;

  size_t prefillTarget() const { return history.size() - (pendingToken ? 1 : 0); }
  bool prefilling() const { return cached < prefillTarget(); }
};

Engine::Engine(const hetrt::api::Model &model, hetrt::api::Session &session,
               EngineOptions options)
    : model_(model), session_(session), options_(options),
      context_(model.contextLength()), vocabSize_(model.vocabSize()) {
  hetrt::api::Status status;
  if (!session_.maxBatch(maxBatch_, status))
    maxBatch_ = 0;
  if (std::optional<hetrt_kv_stats_t> kv = session_.kvStats()) {
    poolPositions_ = kv->blocks * kv->block_size;
    reusedAtStart_ = kv->reused_tokens;
  }
  recordKvMetrics();
  thread_ = std::thread([this] { run(); });
}

Engine::~Engine() { stop(); }

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &active : waiting_)
    active->generation->end("", "the server is shutting down", 0);
  waiting_.clear();
}

std::shared_ptr<Generation> Engine::submit(GenerationRequest request,
                                           std::string &why) {
  if (request.prompt.empty() || request.maxTokens < 1) {
    why = "a request needs at least one prompt token and one token to "
          "generate";
    return nullptr;
  }
  auto active = std::make_unique<Active>();
  hetrt_sampling_params_t params = {
      request.sampling.temperature, request.sampling.topK,
      request.sampling.topP, request.sampling.repeatPenalty,
      request.sampling.seed};
  hetrt::api::Status status;
  active->sampler = hetrt::api::Sampler::create(params, status);
  if (!active->sampler) {
    why = status.message;
    return nullptr;
  }
  active->generation = std::make_shared<Generation>();
  active->text = std::make_unique<TextStream>(request.stop);
  active->history = request.prompt;
  active->request = std::move(request);
  active->arrived = Clock::now();
  active->generation->pending_.promptTokens =
      static_cast<int64_t>(active->request.prompt.size());
  std::shared_ptr<Generation> generation = active->generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      why = "the server is shutting down";
      return nullptr;
    }
    if (static_cast<int64_t>(waiting_.size()) >= options_.maxQueued) {
      why = std::to_string(waiting_.size()) +
            " requests are already waiting for the batch (--max-queued)";
      return nullptr;
    }
    waiting_.push_back(std::move(active));
    metrics_.queued = static_cast<int64_t>(waiting_.size());
  }
  wake_.notify_all();
  return generation;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return metrics_;
}

void Engine::run() {
  bool busy = false;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (busy && waiting_.empty() && running_.empty()) {
        // Idle again: what the load's requests, responses and threads
        // freed goes back to the system rather than staying in the
        // allocator's arenas, so an idle server holds its idle memory.
        lock.unlock();
        malloc_trim(0);
        lock.lock();
      }
      wake_.wait(lock, [&] {
        return stopping_ || !waiting_.empty() || !running_.empty();
      });
      busy = true;
      if (stopping_)
        break;
      // Requests whose client left while waiting never take a sequence.
      for (auto it = waiting_.begin(); it != waiting_.end();)
        if ((*it)->generation->cancelled()) {
          ++metrics_.requestsFinished["cancelled"];
          metrics_.queued = static_cast<int64_t>(waiting_.size()) - 1;
          (*it)->generation->end("cancelled", "", 0);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      // After a preemption the batch grows again only once a request has
      // finished, so the one sent back does not take the pool again at once.
      while (!poolFull_ &&
             static_cast<int32_t>(running_.size()) < options_.parallel &&
             !waiting_.empty()) {
        std::unique_ptr<Active> active = std::move(waiting_.front());
        waiting_.pop_front();
        running_.push_back(std::move(active));
      }
      metrics_.queued = static_cast<int64_t>(waiting_.size());
    }
    for (auto &active : running_)
      if (active->sequence < 0 && !admit(*active))
        finish(*active, "", "the session has no sequence to give");
    for (auto &active : running_)
      if (!active->done && active->generation->cancelled())
        finish(*active, "cancelled");
    dropFinished();
    prefillStep();
    dropFinished();
    decodeStep();
    dropFinished();
    recordKvMetrics();
  }
  for (auto &active : running_)
    finish(*active, "", "the server is shutting down");
  running_.clear();
}

bool Engine::admit(Active &active) {
  hetrt::api::Status status;
  if (!session_.createSequence(active.sequence, status)) {
    active.sequence = -1;
    return false;
  }
  active.cached = 0;
  return true;
}

void Engine::prefillStep() {
  // A prompt is read in pieces that start at whole multiples of the chunk,
  // however many requests share the step: a prompt no longer than a chunk
  // is read in one call, and a longer one in the same pieces, as when it
  // runs alone, so its logits do not depend on what else ran (pieces round
  // the keys of earlier positions as the cache holds them). A piece that no
  // longer fits this step's budget waits for the next step, where it is
  // among the oldest.
  const size_t chunk = static_cast<size_t>(options_.prefillChunk);
  size_t budget = chunk;
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Active &active = *running_[i];
    if (active.done || !active.prefilling())
      continue;
    size_t count = std::min(active.prefillTarget() - active.cached,
                            chunk - active.cached % chunk);
    if (count > budget)
      break;
    std::vector<int32_t> piece(active.history.begin() + active.cached,
                               active.history.begin() + active.cached + count);
    hetrt::api::Status status;
    if (!session_.prefill(active.sequence, piece, status)) {
      if (status.code == HETRT_OUT_OF_MEMORY && preemptNewest())
        return;
      finish(active, "", status.message);
      continue;
    }
    active.cached += count;
    // Counted once, when its prompt is read the first time.
    if (!active.prefilling() && active.generated == 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      metrics_.promptTokens += active.request.prompt.size();
    }
    budget -= count;
    // A request back from preemption has its next token already.
    if (!active.prefilling() && !active.pendingToken)
      emit(active, session_.logits());
  }
}

void Engine::decodeStep() {
  ++step_;
  // A session without a batch program decodes each sequence alone.
  size_t batch = maxBatch_ > 0 ? static_cast<size_t>(maxBatch_) : 1;
  while (true) {
    std::vector<Active *> ready;
    for (auto &active : running_)
      if (!active->done && !active->prefilling() && active->pendingToken &&
          active->decodedAt != step_)
        ready.push_back(active.get());
    if (ready.empty())
      return;
    size_t count = std::min(batch, ready.size());
    std::vector<int32_t> sequences, ids;
    for (size_t r = 0; r < count; ++r) {
      sequences.push_back(ready[r]->sequence);
      ids.push_back(ready[r]->history.back());
    }
    hetrt::api::Status status;
    bool ran = maxBatch_ > 0
                   ? session_.decodeBatch(sequences, ids, status)
                   : session_.decode(sequences[0], ids[0], status);
    if (!ran) {
      // The pool cannot hold every member's blocks at once: with the
      // latest request back in the queue, the others decode this step.
      if (status.code == HETRT_OUT_OF_MEMORY && preemptNewest())
        continue;
      for (size_t r = 0; r < count; ++r)
        finish(*ready[r], "", status.message);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++metrics_.decodeSteps;
      metrics_.lastBatch = static_cast<int64_t>(count);
      metrics_.batchSize.observe(static_cast<double>(count));
    }
    // The rows are the session's until its next call: each is sampled
    // before any other call.
    const float *rows = session_.logits();
    for (size_t r = 0; r < count; ++r) {
      Active &active = *ready[r];
      active.decodedAt = step_;
      active.cached += 1;
      active.pendingToken = false;
      emit(active, rows + static_cast<size_t>(r) * vocabSize_);
    }
  }
}

bool Engine::emit(Active &active, const float *logits) {
  hetrt::api::Status status;
  int32_t token = 0;
  bool isEnd = false;
  if (!active.sampler->sample(logits, vocabSize_, active.history, token,
                              status) ||
      !model_.isEndOfGeneration(token, isEnd, status)) {
    finish(active, "", status.message);
    return false;
  }
  Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.generatedTokens;
    if (active.generated == 0)
      metrics_.timeToFirstToken.observe(
          std::chrono::duration<double>(now - active.arrived).count());
    else
      metrics_.timePerToken.observe(
          std::chrono::duration<double>(now - active.lastToken).count());
  }
  active.lastToken = now;
  active.history.push_back(token);
  active.pendingToken = true;
  ++active.generated;
  if (isEnd && !active.request.ignoreEos) {
    finish(active, "stop");
    return false;
  }
  TokenOutput output;
  output.id = token;
  if (!model_.tokenPiece(token, output.piece, status)) {
    finish(active, "", status.message);
    return false;
  }
  if (active.request.topLogprobs >= 0) {
    float total = logSumExp(logits, vocabSize_);
    output.logprob = logits[token] - total;
    std::vector<int32_t> order(static_cast<size_t>(vocabSize_));
    std::iota(order.begin(), order.end(), 0);
    size_t keep = std::min<size_t>(active.request.topLogprobs, order.size());
    std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[a] > logits[b] ||
                               (logits[a] == logits[b] && a < b);
                      });
    for (size_t k = 0; k < keep; ++k) {
      TokenLogprob alternative;
      alternative.logprob = logits[order[k]] - total;
      if (!model_.tokenPiece(order[k], alternative.piece, status)) {
        finish(active, "", status.message);
        return false;
      }
      output.top.push_back(std::move(alternative));
    }
  }
  std::string shown = active.text->push(output.piece);
  bool stopped = active.text->stopped();
  std::vector<TokenOutput> tokens;
  tokens.push_back(std::move(output));
  active.generation->publish(shown, std::move(tokens), active.generated);
  if (stopped) {
    finish(active, "stop");
    return false;
  }
  // Every sampled token but the last enters the cache: the context's end
  // stops generation as max_tokens does.
  if (active.generated >= active.request.maxTokens ||
      static_cast<int64_t>(active.cached) + 1 > context_) {
    finish(active, "length");
    return false;
  }
  return true;
}

void Engine::finish(Active &active, const std::string &reason,
                    const std::string &error) {
  if (active.done)
    return;
  active.done = true;
  if (active.sequence >= 0) {
    hetrt::api::Status ignored;
    // Removing a sequence the session holds cannot fail; its blocks return
    // to the pool (and stay findable by the prefix cache).
    (void)session_.removeSequence(active.sequence, ignored);
    active.sequence = -1;
    poolFull_ = false;
  }
  // The metrics say the blocks are back before the client hears of the end.
  recordKvMetrics();
  if (error.empty() && reason != "cancelled") {
    std::string rest = active.text->finish();
    if (!rest.empty())
      active.generation->publish(rest, {}, active.generated);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.requestsFinished[error.empty() ? reason : "error"];
  }
  active.generation->end(reason, error, active.generated);
}

bool Engine::preemptNewest() {
  // The latest request to arrive goes back, so the oldest ones progress.
  Active *newest = nullptr;
  size_t live = 0;
  for (auto &active : running_)
    if (!active->done) {
      ++live;
      if (!newest || active->arrived > newest->arrived)
        newest = active.get();
    }
  if (live < 2)
    return false;
  for (auto it = running_.begin(); it != running_.end(); ++it)
    if (it->get() == newest) {
      hetrt::api::Status ignored;
      (void)session_.removeSequence(newest->sequence, ignored);
      newest->sequence = -1;
      newest->cached = 0;
      poolFull_ = true;
      std::lock_guard<std::mutex> lock(mutex_);
      ++metrics_.preemptions;
      waiting_.push_front(std::move(*it));
      running_.erase(it);
      metrics_.queued = static_cast<int64_t>(waiting_.size());
      break;
    }
  return true;
}

void Engine::dropFinished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const std::unique_ptr<Active> &active) {
                                  return active->done;
                                }),
                 running_.end());
}

void Engine::recordKvMetrics() {
  std::optional<hetrt_kv_stats_t> kv = session_.kvStats();
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_.running = static_cast<int64_t>(
      std::count_if(running_.begin(), running_.end(),
                    [](const std::unique_ptr<Active> &active) {
                      return !active->done;
                    }));
  if (!kv)
    return;
  // The session counts reused prompt tokens itself, since it was made.
  metrics_.reusedPromptTokens =
      static_cast<uint64_t>(kv->reused_tokens - reusedAtStart_);
  metrics_.kvPoolBlocks = kv->blocks;
  metrics_.kvPoolBlocksUsed = kv->blocks - kv->free_blocks;
  metrics_.kvHostBytes = kv->host_bytes;
  metrics_.kvDiskBytes = kv->disk_bytes;
  if (kv->tier_block_bytes > 0) {
    metrics_.kvHostBlocks = kv->host_bytes / kv->tier_block_bytes;
    metrics_.kvDiskBlocks = kv->disk_bytes / kv->tier_block_bytes;
  }
}

} // namespace hetc::server
