// Sampling on the CPU; the buffers are reused between calls so the decode loop
// does no allocation after the first token.
#include "runtime/core/Sampler.h"

#include <algorithm>
#include <cmath>

namespace hetrt::core {

int32_t argmax(const float *logits, int64_t vocabSize) {
  int32_t best = 0;
  for (int64_t i = 1; i < vocabSize; ++i)
    if (logits[i] > logits[best])
      best = static_cast<int32_t>(i);
  return best;
}

Sampler::Sampler(const SamplingParams &params)
    : params_(params), generator_(params.seed) {}

namespace {

/// Most likely first; ties to the lower id, so the order is deterministic.
bool moreLikely(const std::pair<float, int32_t> &a,
                const std::pair<float, int32_t> &b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

/// The largest logit, NaNs ignored, along eight independent maxima so the
/// loop is not one long chain of dependent instructions.
float largestLogit(const float *logits, size_t count) {
  float lanes[8];
  std::fill(std::begin(lanes), std::end(lanes), -INFINITY);
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int lane = 0; lane < 8; ++lane)
      lanes[lane] = logits[i + lane] > lanes[lane] ? logits[i + lane] : lanes[lane];
  for (; i < count; ++i)
    lanes[0] = logits[i] > lanes[0] ? logits[i] : lanes[0];
  return *std::max_element(std::begin(lanes), std::end(lanes));
}

} // namespace

void Sampler::applyPenalty(const float *logits, int64_t vocabSize,
                           const std::vector<int32_t> &history) {
  penalized_.assign(logits, logits + vocabSize);
  size_t window = std::min(history.size(),
                           static_cast<size_t>(std::max(0, params_.penaltyWindow)));
  // Each recent token once, however often it recurs; sorted in place of a
  // hash set so the decode loop does not allocate.
  seen_.assign(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
  std::sort(seen_.begin(), seen_.end());
  seen_.erase(std::unique(seen_.begin(), seen_.end()), seen_.end());
  for (int32_t id : seen_) {
    if (id < 0 || id >= vocabSize)
      continue;
    float &logit = penalized_[static_cast<size_t>(id)];
    logit = logit > 0 ? logit / params_.repetitionPenalty
                      : logit * params_.repetitionPenalty;
  }
}

void Sampler::selectTopK(const float *logits, size_t vocabSize, size_t keep) {
  // The k most likely are found among the logits within `margin_` of the
  // largest, widening the margin until at least k are inside: a pass without
  // data-dependent branches over the vocabulary, then a selection over a few
  // dozen candidates, instead of a heap over all of them whose comparisons
  // the branch predictor cannot learn.
  float maxLogit = largestLogit(logits, vocabSize);
  // Grown once: resizing the kept list back to the vocabulary every token
  // would clear megabytes.
  if (pool_.size() < vocabSize)
    pool_.resize(vocabSize);
  size_t inside = 0;
  if (std::isfinite(maxLogit)) {
    // Never zero, or widening would not widen.
    float margin = std::max(margin_, 1.0f / 64);
    // Widening gently: a margin twice too wide lets in hundreds of times the
    // candidates needed when the logits' tail is thin.
    for (int attempt = 0; attempt < 24 && inside < keep;
         ++attempt, margin *= 1.5f) {
      float floor = maxLogit - margin;
      inside = 0;
      for (size_t i = 0; i < vocabSize; ++i) {
        pool_[inside] = {logits[i], static_cast<int32_t>(i)};
        inside += logits[i] >= floor;
      }
      if (inside >= keep)
        margin_ = margin;
    }
  }
  if (inside < keep) {
    // Infinities, NaNs or an extreme spread: every logit is a candidate.
    for (size_t i = 0; i < vocabSize; ++i)
      pool_[i] = {logits[i], static_cast<int32_t>(i)};
    inside = vocabSize;
  }
  auto begin = pool_.begin();
  if (keep < inside)
    std::nth_element(begin, begin + static_cast<std::ptrdiff_t>(keep),
                     begin + static_cast<std::ptrdiff_t>(inside), moreLikely);
  candidates_.assign(begin, begin + static_cast<std::ptrdiff_t>(keep));
  std::sort(candidates_.begin(), candidates_.end(), moreLikely);
  // Next time, start from a margin that held a few times the k needed; the
  // distributions of consecutive steps are alike.
  if (inside > 4 * keep)
    margin_ *= 0.75f;
}

int32_t Sampler::sample(const float *logits, int64_t vocabSize,
                        const std::vector<int32_t> &history) {
  if (vocabSize <= 0)
    return 0;
  if (params_.repetitionPenalty != 1.0f && !history.empty()) {
    applyPenalty(logits, vocabSize, history);
    logits = penalized_.data();
  }

  if (params_.temperature <= 0.0f)
    return argmax(logits, vocabSize);

  size_t keep = static_cast<size_t>(vocabSize);
  if (params_.topK > 0 && static_cast<size_t>(params_.topK) < keep)
    keep = static_cast<size_t>(params_.topK);
  selectTopK(logits, static_cast<size_t>(vocabSize), keep);

  float maxLogit = candidates_.front().first;
  double total = 0;
  for (auto &[logit, id] : candidates_) {
    logit = std::exp((logit - maxLogit) / params_.temperature);
    total += logit;
  }
  if (params_.topP < 1.0f) {
    double cumulative = 0;
    size_t cut = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      cumulative += candidates_[i].first / total;
      if (cumulative >= params_.topP) {
        cut = i + 1;
        break;
      }
    }
    candidates_.resize(cut);
    total = 0;
    for (const auto &[weight, id] : candidates_)
      total += weight;
  }
  // A uniform draw in [0, 1) from the generator's top 53 bits.
  double draw = static_cast<double>(generator_() >> 11) * 0x1.0p-53 * total;
  double cumulative = 0;
  for (const auto &[weight, id] : candidates_) {
    cumulative += weight;
    if (draw < cumulative)
      return id;
  }
  return candidates_.back().second;
}

} // namespace hetrt::core
