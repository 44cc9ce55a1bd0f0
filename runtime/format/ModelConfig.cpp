// Reading and validating model hyper-parameters from GGUF metadata.
#include "runtime/format/ModelConfig.h"

#include <sstream>

namespace hetrt::format {

namespace {
/// Reads `<arch>.<suffix>` as an integer; `fallback` when absent.
class ConfigReader {
public:
  ConfigReader(const GgufFile &file, std::string arch, std::string &error)
      : file_(file), arch_(std::move(arch)), error_(error) {}

  bool integer(const std::string &suffix, int64_t &out,
               std::optional<int64_t> fallback) {
    std::string key = arch_ + "." + suffix;
    const GgufValue *value = file_.find(key);
    if (!value) {
      if (fallback) {
        out = *fallback;
        return true;
      }
      return fail("metadata key \"" + key +
                  "\" is missing; re-convert the model with a current "
                  "llama.cpp converter");
    }
    std::optional<int64_t> number = value->asInt();
    if (!number || *number <= 0)
      return fail("metadata key \"" + key +
                  "\" must be a positive integer, got a " +
                  std::string(ggufTypeName(value->type())) +
                  (number ? " " + std::to_string(*number) : std::string()));
    out = *number;
    return true;
  }

  bool real(const std::string &suffix, float &out, float fallback) {
    std::string key = arch_ + "." + suffix;
    const GgufValue *value = file_.find(key);
    if (!value) {
      out = fallback;
      return true;
    }
    std::optional<double> number = value->asDouble();
    if (!number || !(*number > 0))
      return fail("metadata key \"" + key + "\" must be a positive number");
    out = static_cast<float>(*number);
    return true;
  }

  bool fail(const std::string &message) {
    error_ = file_.path() + ": " + message;
    return false;
  }

private:
  const GgufFile &file_;
  std::string arch_;
  std::string &error_;
};
} // namespace

std::optional<ModelConfig> ModelConfig::fromGguf(const GgufFile &file,
                                                 std::string &error) {
  ModelConfig config;
  const GgufValue *arch = file.find("general.architecture");
  if (!arch || !arch->asString()) {
    error = file.path() + ": metadata key \"general.architecture\" is missing "
                          "or not a string; this is not a model file hetc can "
                          "import";
    return std::nullopt;
  }
  config.architecture = std::string(*arch->asString());
  if (config.architecture != "llama" && config.architecture != "mistral" &&
      config.architecture != "qwen2") {
    error = file.path() + ": architecture \"" + config.architecture +
            "\" is not supported (hetc imports llama, mistral and qwen2)";
    return std::nullopt;
  }
  ConfigReader read(file, config.architecture, error);
  auto invalid = [&](const std::string &message) {
    read.fail(message);
    return std::nullopt;
  };
  if (!read.integer("embedding_length", config.dim, std::nullopt) ||
      !read.integer("block_count", config.numLayers, std::nullopt) ||
      !read.integer("feed_forward_length", config.ffnDim, std::nullopt) ||
      !read.integer("attention.head_count", config.numHeads, std::nullopt) ||
      !read.integer("attention.head_count_kv", config.numKvHeads,
                    config.numHeads) ||
      !read.integer("context_length", config.contextLength, std::nullopt) ||
      !read.real("attention.layer_norm_rms_epsilon", config.rmsEpsilon, 1e-5f) ||
      !read.real("rope.freq_base", config.ropeTheta, 10000.0f))
    return std::nullopt;
  if (config.dim % config.numHeads != 0)
    return invalid("embedding_length (" + std::to_string(config.dim) +
                     ") is not a multiple of attention.head_count (" +
                     std::to_string(config.numHeads) + ")");
  if (!read.integer("attention.key_length", config.headDim,
                    config.dim / config.numHeads) ||
      !read.integer("rope.dimension_count", config.ropeDim, config.headDim))
    return std::nullopt;
  if (config.numHeads % config.numKvHeads != 0)
    return invalid("attention.head_count (" +
                     std::to_string(config.numHeads) +
                     ") is not a multiple of attention.head_count_kv (" +
                     std::to_string(config.numKvHeads) + ")");
  if (config.ropeDim % 2 != 0 || config.ropeDim > config.headDim)
    return invalid("rope.dimension_count (" + std::to_string(config.ropeDim) +
                     ") must be even and at most the head size (" +
                     std::to_string(config.headDim) + ")");
  int64_t window = 0;
  if (file.find(config.architecture + ".attention.sliding_window")) {
    if (!read.integer("attention.sliding_window", window, std::nullopt))
      return std::nullopt;
    config.slidingWindow = window;
  }
  config.ropeStyle =
      config.architecture == "qwen2" ? RopeStyle::NeoX : RopeStyle::Normal;

  const GgufTensorInfo *embedding = file.findTensor("token_embd.weight");
  if (!embedding || embedding->dims.size() != 2 ||
      embedding->dims[0] != config.dim)
    return invalid("tensor \"token_embd.weight\" must exist with shape "
                     "[vocab, " +
                     std::to_string(config.dim) + "]");
  config.vocabSize = embedding->dims[1];
  config.tiedOutput = file.findTensor("output.weight") == nullptr;
  config.qkvBias = file.findTensor("blk.0.attn_q.bias") != nullptr;
  config.ropeFreqFactors = file.findTensor("rope_freqs.weight") != nullptr;
  return config;
}

} // namespace hetrt::format
