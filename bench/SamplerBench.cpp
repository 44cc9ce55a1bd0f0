// The sampler's cost per token at hetc run's defaults (temperature 0.8,
// top-k 40, top-p 0.95), against a heap over the whole vocabulary
// (std::partial_sort, the textbook top-k) in the same run. Every iteration
// samples a different logit row so the branch predictor cannot learn one.
#include "runtime/core/Sampler.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

namespace {

constexpr int kRows = 64;

std::vector<std::vector<float>> logitRows(int64_t vocabSize) {
  std::mt19937 generator(7);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<std::vector<float>> rows(kRows, std::vector<float>(vocabSize));
  for (std::vector<float> &row : rows)
    for (float &value : row)
      value = logit(generator);
  return rows;
}

void samplerAtDefaults(benchmark::State &state) {
  int64_t vocabSize = state.range(0);
  std::vector<std::vector<float>> rows = logitRows(vocabSize);
  hetrt::core::Sampler sampler(hetrt::core::SamplingParams{});
  std::vector<int32_t> history;
  size_t row = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        sampler.sample(rows[row].data(), vocabSize, history));
    row = (row + 1) % kRows;
  }
  state.SetItemsProcessed(state.iterations());
}

void heapTopK(benchmark::State &state) {
  int64_t vocabSize = state.range(0);
  std::vector<std::vector<float>> rows = logitRows(vocabSize);
  std::vector<std::pair<float, int32_t>> candidates;
  size_t row = 0;
  for (auto _ : state) {
    candidates.resize(static_cast<size_t>(vocabSize));
    for (int64_t i = 0; i < vocabSize; ++i)
      candidates[static_cast<size_t>(i)] = {rows[row][static_cast<size_t>(i)],
                                            static_cast<int32_t>(i)};
    std::partial_sort(candidates.begin(), candidates.begin() + 40,
                      candidates.end(), [](const auto &a, const auto &b) {
                        return a.first > b.first ||
                               (a.first == b.first && a.second < b.second);
                      });
    benchmark::DoNotOptimize(candidates.front());
    row = (row + 1) % kRows;
  }
  state.SetItemsProcessed(state.iterations());
}

} // namespace

BENCHMARK(samplerAtDefaults)->Arg(512)->Arg(32000)->Arg(128256);
BENCHMARK(heapTopK)->Arg(512)->Arg(32000)->Arg(128256);

BENCHMARK_MAIN();
