// The hyper-parameters of a decoder-only model, read from GGUF metadata with
// llama.cpp's defaults where a key is absent. Used by the importer, the runtime
// and the planner alike.
#ifndef HETRT_FORMAT_MODELCONFIG_H
#define HETRT_FORMAT_MODELCONFIG_H

#include "runtime/format/Gguf.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hetrt::format {

/// RoPE pairing, as llama.cpp's rope types.
enum class RopeStyle {
  /// Adjacent pairs (llama, mistral): the GGUF converter permutes Q/K for it.
  Normal,
  /// Split halves (qwen2, phi3, gemma, ...).
  NeoX,
};

/// The longest context hetc addresses: positions are 32-bit in the kernels.
inline constexpr int64_t kMaxContextLength = INT32_MAX;

/// The range a model-defining float may take, from a GGUF file or a
/// config.json: what any trained model uses, with a wide margin.
struct ModelFloatRange {
  double low, high;
};
inline constexpr ModelFloatRange kRmsEpsilonRange{1e-12, 1e-1};
inline constexpr ModelFloatRange kRopeBaseRange{1.0, 1e9};

struct ModelConfig {
  /// `general.architecture`: llama, mistral or qwen2.
  std::string architecture;
  int64_t dim = 0;
  int64_t numLayers = 0;
  int64_t ffnDim = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t vocabSize = 0;
  int64_t contextLength = 0;
  int64_t ropeDim = 0;
  float ropeTheta = 10000.0f;
  RopeStyle ropeStyle = RopeStyle::Normal;
  float rmsEpsilon = 1e-5f;
  /// Mistral-style sliding-window attention, when the model has it.
  std::optional<int64_t> slidingWindow;
  /// No `output.weight`: the output projection is the token embedding.
  bool tiedOutput = false;
  /// Q/K/V projections carry biases (qwen2).
  bool qkvBias = false;
  /// Llama 3 style per-frequency RoPE factors (`rope_freqs.weight`).
  bool ropeFreqFactors = false;

  /// Reads and validates the config of `file`. On failure returns nullopt and
  /// sets `error` to a message naming the file, the key and the fix.
  static std::optional<ModelConfig> fromGguf(const GgufFile &file,
                                             std::string &error);
};

} // namespace hetrt::format

#endif // HETRT_FORMAT_MODELCONFIG_H
