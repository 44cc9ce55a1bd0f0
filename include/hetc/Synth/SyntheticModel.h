// Synthetic Llama-shaped models with deterministic pseudo-random weights and a
// valid tokenizer, for tests, benchmarks and the README's default run.
#ifndef HETC_SYNTH_SYNTHETICMODEL_H
#define HETC_SYNTH_SYNTHETICMODEL_H

#include <cstdint>
#include <string>

namespace hetc::synth {

/// Storage of the model's matrices. Norm weights are always F32.
enum class WeightType { F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K_M, Q4_K_M, Q5_K_M };

/// Parses f32, f16, bf16, q8_0, q4_0, q2_k, q3_k_m, q4_k_m, q5_k_m.
bool parseWeightType(const std::string &name, WeightType &type);

struct SyntheticModelSpec {
  /// llama, or qwen2 (adds Q/K/V biases; RoPE pairs the two halves).
  std::string architecture = "llama";
  int64_t dim = 256;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kvHeads = 4;
  int64_t ffnDim = 512;
  int64_t vocabSize = 512;
  int64_t contextLength = 2048;
  float ropeBase = 10000.0f;
  /// The output projection is the token embedding (no output.weight).
  bool tiedOutput = false;
  /// Every matrix, the embedding and the output included, is stored in this
  /// type; the k-quant types follow llama.cpp's mixes: Q4_K_M is Q4_K with
  /// Q6_K for attn_v, ffn_down and the output; Q5_K_M is Q5_K with the same
  /// Q6_K tensors; Q3_K_M is Q3_K with Q5_K for attn_v and ffn_down, Q4_K for
  /// attn_output and Q6_K for the output; Q2_K is Q2_K with Q3_K for attn_v
  /// and ffn_down and Q6_K for the output.
  WeightType weightType = WeightType::F32;
  /// Seeds the weights: the same spec and seed give the same file.
  uint64_t seed = 1;
};

/// Checks the flags' ranges and shape rules (heads divide dim, kv heads
/// divide heads, rows hold whole blocks of the weight type). Returns false
/// and sets `error` naming the flag and the fix when they are broken.
bool checkSyntheticModelSpec(const SyntheticModelSpec &spec,
                             std::string &error);

/// Checks the spec as checkSyntheticModelSpec does and writes the GGUF file. Returns false and sets
/// `error` naming the flag and the fix on failure.
bool writeSyntheticModel(const SyntheticModelSpec &spec,
                         const std::string &path, std::string &error);

} // namespace hetc::synth

#endif // HETC_SYNTH_SYNTHETICMODEL_H
