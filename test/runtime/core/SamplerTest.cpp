// The sampler against a direct transcription of its contract (penalty, then
// temperature, top-k by a full sort, top-p, one draw from the generator's top
// 53 bits): the same seed and logits must give the same token, whatever the
// logits look like.
#include "runtime/core/Sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace {

using hetrt::core::Sampler;
using hetrt::core::SamplingParams;

/// The contract, written for clarity rather than speed.
class ReferenceSampler {
public:
  explicit ReferenceSampler(const SamplingParams &params)
      : params_(params), generator_(params.seed) {}

  int32_t sample(std::vector<float> logits, const std::vector<int32_t> &history) {
    if (params_.repetitionPenalty != 1.0f) {
      size_t window = std::min(history.size(),
                               static_cast<size_t>(params_.penaltyWindow));
      std::set<int32_t> seen(history.end() - static_cast<std::ptrdiff_t>(window),
                             history.end());
      for (int32_t id : seen) {
        float &logit = logits[static_cast<size_t>(id)];
        logit = logit > 0 ? logit / params_.repetitionPenalty
                          : logit * params_.repetitionPenalty;
      }
    }
    std::vector<std::pair<float, int32_t>> ranked;
    for (size_t i = 0; i < logits.size(); ++i)
      ranked.push_back({logits[i], static_cast<int32_t>(i)});
    std::sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    if (params_.temperature <= 0)
      return ranked.front().second;
    if (params_.topK > 0 && static_cast<size_t>(params_.topK) < ranked.size())
      ranked.resize(static_cast<size_t>(params_.topK));
    float maxLogit = ranked.front().first;
    double total = 0;
    for (auto &[logit, id] : ranked) {
      logit = std::exp((logit - maxLogit) / params_.temperature);
      total += logit;
    }
    if (params_.topP < 1.0f) {
      double cumulative = 0;
      size_t cut = ranked.size();
      for (size_t i = 0; i < ranked.size(); ++i) {
        cumulative += ranked[i].first / total;
        if (cumulative >= params_.topP) {
          cut = i + 1;
          break;
        }
      }
      ranked.resize(cut);
      total = 0;
      for (const auto &[weight, id] : ranked)
        total += weight;
    }
    double draw = static_cast<double>(generator_() >> 11) * 0x1.0p-53 * total;
    double cumulative = 0;
    for (const auto &[weight, id] : ranked) {
      cumulative += weight;
      if (draw < cumulative)
        return id;
    }
    return ranked.back().second;
  }

private:
  SamplingParams params_;
  std::mt19937_64 generator_;
};

enum class Shape { Normal, Peaked, Flat, Ties, Masked };

std::vector<float> makeLogits(Shape shape, int64_t vocabSize, std::mt19937 &random) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(vocabSize));
  for (float &logit : logits)
    logit = normal(random);
  switch (shape) {
  case Shape::Normal:
    break;
  case Shape::Peaked:
    // One token far ahead: the margin search must widen to find the rest.
    logits[random() % logits.size()] = 60.0f;
    break;
  case Shape::Flat:
    for (float &logit : logits)
      logit = 0.25f;
    break;
  case Shape::Ties:
    for (float &logit : logits)
      logit = std::round(logit);
    break;
  case Shape::Masked:
    // Most of the vocabulary ruled out, as a grammar would.
    for (size_t i = 0; i < logits.size(); ++i)
      if (i % 7 != 3)
        logits[i] = -INFINITY;
    break;
  }
  return logits;
}

TEST(Sampler, AgreesWithTheReferenceOnEveryShapeAndSetting) {
  std::mt19937 random(11);
  const std::vector<SamplingParams> settings = [] {
    std::vector<SamplingParams> all;
    SamplingParams defaults;
    all.push_back(defaults);
    SamplingParams noTopK = defaults;
    noTopK.topK = 0;
    all.push_back(noTopK);
    SamplingParams noTopP = defaults;
    noTopP.topP = 1.0f;
    all.push_back(noTopP);
    SamplingParams narrow = defaults;
    narrow.topK = 3;
    narrow.temperature = 1.7f;
    all.push_back(narrow);
    SamplingParams wideK = defaults;
    wideK.topK = 5000;
    wideK.topP = 0.5f;
    all.push_back(wideK);
    SamplingParams penalized = defaults;
    penalized.repetitionPenalty = 1.3f;
    all.push_back(penalized);
    SamplingParams greedy = defaults;
    greedy.temperature = 0.0f;
    greedy.repetitionPenalty = 1.1f;
    all.push_back(greedy);
    return all;
  }();
  int compared = 0;
  for (int64_t vocabSize : {1, 7, 40, 41, 512, 32000}) {
    for (Shape shape : {Shape::Normal, Shape::Peaked, Shape::Flat, Shape::Ties,
                        Shape::Masked}) {
      for (size_t setting = 0; setting < settings.size(); ++setting) {
        SamplingParams params = settings[setting];
        params.seed = 1000 + setting;
        Sampler sampler(params);
        ReferenceSampler reference(params);
        std::vector<int32_t> history;
        // Consecutive calls, so the state the sampler carries between tokens
        // is exercised with logits of changing spread.
        for (int step = 0; step < 12; ++step) {
          std::vector<float> logits = makeLogits(shape, vocabSize, random);
          if (step % 3 == 2)
            for (float &logit : logits)
              logit *= 8.0f;
          int32_t expected = reference.sample(logits, history);
          int32_t got = sampler.sample(logits.data(), vocabSize, history);
          ASSERT_EQ(got, expected)
              << "vocab " << vocabSize << ", shape " << static_cast<int>(shape)
              << ", setting " << setting << ", step " << step;
          history.push_back(got);
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 6 * 5 * 7 * 12);
}

TEST(Sampler, MaskedTokensAreNeverChosen) {
  std::mt19937 random(5);
  SamplingParams params;
  params.topK = 0;
  params.topP = 1.0f;
  params.temperature = 2.0f;
  Sampler sampler(params);
  for (int step = 0; step < 200; ++step) {
    std::vector<float> logits = makeLogits(Shape::Masked, 512, random);
    int32_t token = sampler.sample(logits.data(), 512, {});
    EXPECT_EQ(token % 7, 3) << "step " << step;
  }
}

TEST(Sampler, GreedyPicksTheLargestLogitAndTheLowestIdOnTies) {
  Sampler sampler(SamplingParams{0.0f});
  std::vector<float> logits = {1.0f, 4.0f, -2.0f, 4.0f};
  EXPECT_EQ(sampler.sample(logits.data(), 4, {}), 1);
  EXPECT_EQ(hetrt::core::argmax(logits.data(), 4), 1);
}

} // namespace
