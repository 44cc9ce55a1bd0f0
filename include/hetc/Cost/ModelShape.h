// What planning needs of a model: its hyper-parameters and, per weight, its
// shape and storage. Read from a GGUF header (the weights are never touched)
// or from a Hugging Face config.json with a chosen weight type, so a 70B
// model can be planned without its weights.
#ifndef HETC_COST_MODELSHAPE_H
#define HETC_COST_MODELSHAPE_H

#include "abi/BlockFormats.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetc::cost {

/// Where a weight sits in a decoder.
enum class WeightRole { Embedding, Output, Attention, Ffn, Experts, Norm };

struct WeightInfo {
  /// GGUF name, e.g. "blk.3.attn_q.weight".
  std::string name;
  /// Decoder layer, or -1 for the embedding, the output and the final norm.
  int layer = -1;
  WeightRole role = WeightRole::Norm;
  int64_t elements = 0;
  hetrt::format::BlockFormat format = hetrt::format::BlockFormat::F32;
  uint64_t bytes = 0;
};

struct ModelShape {
  /// The file the shape was read from.
  std::string origin;
  std::string architecture;
  int64_t numLayers = 0;
  int64_t dim = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t ffnDim = 0;
  int64_t vocabSize = 0;
  bool tiedOutput = false;
  /// The context the model was trained for (GGUF context_length, config.json
  /// max_position_embeddings); 0 when the file does not say.
  int64_t trainedContext = 0;
  /// Mixture of experts: experts per layer and experts each token uses.
  int64_t numExperts = 0;
  int64_t expertsPerToken = 0;
  std::vector<WeightInfo> weights;

  uint64_t totalWeightBytes() const;
  /// Bytes of one KV-cache entry (K and V of one token in one layer) at
  /// `bytesPerElement` (4 for the f32 cache hetc's CPU code keeps).
  double kvBytesPerTokenLayer(double bytesPerElement) const {
    return 2.0 * static_cast<double>(numKvHeads * headDim) * bytesPerElement;
  }
};

/// Sets `weight.layer` and `weight.role` from its GGUF name.
void classifyWeight(WeightInfo &weight);

/// Reads the shape from a GGUF file's metadata and tensor infos.
std::optional<ModelShape> shapeFromGguf(const std::string &path,
                                        std::string &error);

/// Weight types a config.json can be planned with: f32, f16, bf16, q8_0,
/// q4_0, q4_k_m (Q4_K with Q6_K for the output, attn_v and ffn_down, as
/// llama.cpp's Q4_K_M mostly does).
std::optional<ModelShape> shapeFromHfConfig(const std::string &path,
                                            const std::string &weightType,
                                            std::string &error);

/// A GGUF when `path` ends in .gguf, else a config.json.
std::optional<ModelShape> loadModelShape(const std::string &path,
                                         const std::string &weightType,
                                         std::string &error);

} // namespace hetc::cost

#endif // HETC_COST_MODELSHAPE_H
