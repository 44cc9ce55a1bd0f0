// Sampling on the CPU; the candidate list is reused between calls so the decode
// loop does no allocation after the first token.
#include "runtime/core/Sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

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

int32_t Sampler::sample(const float *logits, int64_t vocabSize,
                        const std::vector<int32_t> &history) {
  candidates_.resize(static_cast<size_t>(vocabSize));
  for (int64_t i = 0; i < vocabSize; ++i)
    candidates_[static_cast<size_t>(i)] = {logits[i], static_cast<int32_t>(i)};

  if (params_.repetitionPenalty != 1.0f && !history.empty()) {
    size_t window = std::min(history.size(),
                             static_cast<size_t>(std::max(0, params_.penaltyWindow)));
    std::unordered_set<int32_t> seen(history.end() - window, history.end());
    for (int32_t id : seen) {
      if (id < 0 || id >= vocabSize)
        continue;
      float &logit = candidates_[static_cast<size_t>(id)].first;
      logit = logit > 0 ? logit / params_.repetitionPenalty
                        : logit * params_.repetitionPenalty;
    }
  }

  if (params_.temperature <= 0.0f) {
    int32_t best = 0;
    for (size_t i = 1; i < candidates_.size(); ++i)
      if (candidates_[i].first > candidates_[static_cast<size_t>(best)].first)
        best = static_cast<int32_t>(i);
    return best;
  }

  // Most likely first; ties to the lower id, so the order is deterministic.
  auto byLikelihood = [](const std::pair<float, int32_t> &a,
                         const std::pair<float, int32_t> &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (params_.topK > 0 && static_cast<size_t>(params_.topK) < keep)
    keep = static_cast<size_t>(params_.topK);
  std::partial_sort(candidates_.begin(), candidates_.begin() + keep,
                    candidates_.end(), byLikelihood);
  candidates_.resize(keep);

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
