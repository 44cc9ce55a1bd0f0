// Choosing the next token from logits: repetition penalty, temperature, top-k,
// top-p, and a seeded generator, in llama.cpp's order.
#ifndef HETRT_CORE_SAMPLER_H
#define HETRT_CORE_SAMPLER_H

#include <cstdint>
#include <random>
#include <vector>

namespace hetrt::core {

struct SamplingParams {
  /// 0 means greedy: the highest logit, ties to the lowest id.
  float temperature = 0.8f;
  /// Keep the k most likely tokens; 0 keeps all.
  int32_t topK = 40;
  /// Keep the smallest set whose probability reaches p; 1 keeps all.
  float topP = 0.95f;
  /// Divides positive (multiplies negative) logits of recently seen tokens; 1
  /// disables it.
  float repetitionPenalty = 1.0f;
  /// How many recent tokens the penalty looks at.
  int32_t penaltyWindow = 64;
  uint64_t seed = 0;
};

/// Not thread-safe. The same params, seed and logits give the same tokens on
/// every platform (the generator is mt19937_64, specified by the standard, and
/// the uniform draw is computed here rather than by a library distribution).
class Sampler {
public:
  explicit Sampler(const SamplingParams &params);

  /// Picks a token from `logits` (`vocabSize` values) given the tokens seen so
  /// far (`history`, for the penalty).
  int32_t sample(const float *logits, int64_t vocabSize,
                 const std::vector<int32_t> &history);

private:
  /// Writes the logits with recent tokens penalized to `penalized_`.
  void applyPenalty(const float *logits, int64_t vocabSize,
                    const std::vector<int32_t> &history);
  /// Leaves the `keep` most likely of `logits` in `candidates_`, most likely
  /// first.
  void selectTopK(const float *logits, size_t vocabSize, size_t keep);

  SamplingParams params_;
  std::mt19937_64 generator_;
  std::vector<float> penalized_;
  std::vector<int32_t> seen_;
  /// The logits near the largest, as (logit, id).
  std::vector<std::pair<float, int32_t>> pool_;
  /// The kept tokens, most likely first.
  std::vector<std::pair<float, int32_t>> candidates_;
  /// How far below the largest logit the top-k search starts looking.
  float margin_ = 4.0f;
};

/// The highest logit's id, ties to the lowest.
int32_t argmax(const float *logits, int64_t vocabSize);

} // namespace hetrt::core

#endif // HETRT_CORE_SAMPLER_H
