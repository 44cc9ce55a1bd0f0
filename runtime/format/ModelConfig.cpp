// Reading and validating model hyper-parameters from GGUF metadata.
#include "runtime/format/ModelConfig.h"

#include "abi/TensorNames.h"
#include "runtime/format/InputFile.h"

#include <cmath>
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

  bool real(const std::string &suffix, float &out,
            std::optional<float> fallback, ModelFloatRange range) {
    std::string key = arch_ + "." + suffix;
    const GgufValue *value = file_.find(key);
    if (!value) {
      if (!fallback)
        return fail("metadata key \"" + key +
                    "\" is missing; re-convert the model with a current "
                    "llama.cpp converter");
      out = *fallback;
      return true;
    }
    std::optional<double> number = value->asDouble();
    if (!number || !(*number > 0) || !std::isfinite(*number))
      return fail("metadata key \"" + key +
                  "\" must be a positive finite number, got " +
                  (number ? readableNumber(*number)
                          : "a " + std::string(ggufTypeName(value->type()))) +
                  "; fix the metadata");
    if (*number < range.low || *number > range.high) {
      return fail("metadata key \"" + key + "\" is " +
                  readableNumber(*number) + ", outside the " +
                  readableNumber(range.low) + " to " +
                  readableNumber(range.high) + " models use; correct the value");
    }
    out = static_cast<float>(*number);
    return true;
  }

  bool fail(const std::string &message) {
    error_ = file_.path() + ": " + withFix(message,
                                           "fix the metadata, or re-convert the "
                                           "model with a current llama.cpp "
                                           "converter");
    return false;
  }

private:
  const GgufFile &file_;
  std::string arch_;
  std::string &error_;
};
std::string shapeText(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

/// Tensors in `file` that no tensor of the model is (outside the tensor
/// grammar, or of a layer past the last), as a hint to why a tensor is
/// missing: most often it was renamed or mistyped.
std::string strayTensorHint(const GgufFile &file, const ModelConfig &config) {
  std::vector<std::string> strays;
  for (const GgufTensorInfo &tensor : file.tensors()) {
    std::optional<TensorName> name = parseTensorName(tensor.name);
    if (!name || name->layer >= config.numLayers)
      strays.push_back(printable(tensor.name));
  }
  if (strays.empty())
    return "";
  std::string hint = " (the file has " + std::to_string(strays.size()) +
                     " tensor" + (strays.size() == 1 ? "" : "s") +
                     " this model does not use:";
  for (size_t i = 0; i < strays.size() && i < 3; ++i)
    hint += std::string(i ? "," : "") + " \"" + strays[i] + "\"";
  return hint + (strays.size() > 3 ? ", ..." : "") + "; was one renamed?)";
}

/// Checks that the tensors the hyper-parameters promise exist with the shapes
/// they imply (GGUF order, innermost first), and that no tensor belongs to a
/// layer past block_count: a file whose metadata contradicts its tensors is
/// refused here, before anything is sized from the metadata.
bool checkTensors(const GgufFile &file, const ModelConfig &config,
                  std::string &error) {
  auto fail = [&](const std::string &message) {
    error = file.path() + ": " + message +
            "; the metadata contradicts the tensors (re-convert the model "
            "with a current llama.cpp converter)";
    return false;
  };
  // One lookup bounds block_count by the tensors before any loop over it.
  std::string lastNorm =
      "blk." + std::to_string(config.numLayers - 1) + ".attn_norm.weight";
  if (!file.findTensor(lastNorm))
    return fail("block_count is " + std::to_string(config.numLayers) +
                " but tensor \"" + lastNorm + "\" is missing");
  auto expect = [&](const std::string &name, std::vector<int64_t> dims,
                    const std::string &because) {
    const GgufTensorInfo *tensor = file.findTensor(name);
    if (!tensor)
      return fail("tensor \"" + name + "\" is missing" +
                  strayTensorHint(file, config));
    if (tensor->dims != dims)
      return fail("tensor \"" + name + "\" has shape " +
                  shapeText(tensor->dims) + " but " + because + " need " +
                  shapeText(dims));
    // Norm weights are vectors llama.cpp's converters always keep in f32,
    // and hetc's kernels read them so.
    if (dims.size() == 1 && tensor->format != BlockFormat::F32) {
      error = file.path() + ": tensor \"" + name + "\" is stored as " +
              std::string(blockLayout(tensor->format).name) +
              "; norm weights must be f32 (re-convert the model with a "
              "current llama.cpp converter)";
      return false;
    }
    return true;
  };
  int64_t qDim = config.numHeads * config.headDim;
  int64_t kvDim = config.numKvHeads * config.headDim;
  std::string byDim = "embedding_length " + std::to_string(config.dim);
  std::string byQ = byDim + ", head_count " + std::to_string(config.numHeads) +
                    " and key_length " + std::to_string(config.headDim);
  std::string byKv = byDim + ", head_count_kv " +
                     std::to_string(config.numKvHeads) + " and key_length " +
                     std::to_string(config.headDim);
  std::string byFfn = byDim + " and feed_forward_length " +
                      std::to_string(config.ffnDim);
  for (int64_t layer = 0; layer < config.numLayers; ++layer) {
    std::string prefix = "blk." + std::to_string(layer) + ".";
    if (!expect(prefix + "attn_norm.weight", {config.dim}, byDim) ||
        !expect(prefix + "attn_q.weight", {config.dim, qDim}, byQ) ||
        !expect(prefix + "attn_k.weight", {config.dim, kvDim}, byKv) ||
        !expect(prefix + "attn_v.weight", {config.dim, kvDim}, byKv) ||
        !expect(prefix + "attn_output.weight", {qDim, config.dim}, byQ) ||
        !expect(prefix + "ffn_norm.weight", {config.dim}, byDim))
      return false;
    // Mixture-of-experts layers hold their FFNs as expert stacks.
    if (file.findTensor(prefix + "ffn_gate_inp.weight"))
      continue;
    if (!expect(prefix + "ffn_gate.weight", {config.dim, config.ffnDim}, byFfn) ||
        !expect(prefix + "ffn_up.weight", {config.dim, config.ffnDim}, byFfn) ||
        !expect(prefix + "ffn_down.weight", {config.ffnDim, config.dim}, byFfn))
      return false;
  }
  if (!expect("output_norm.weight", {config.dim}, byDim))
    return false;
  if (file.findTensor("output.weight") &&
      !expect("output.weight", {config.dim, config.vocabSize},
              byDim + " and the vocabulary of token_embd.weight"))
    return false;
  for (const GgufTensorInfo &tensor : file.tensors()) {
    std::optional<TensorName> name = parseTensorName(tensor.name);
    if (!name) {
      error = file.path() + ": tensor \"" + printable(tensor.name) +
              "\" is not a tensor of a " + config.architecture +
              " model (hetc reads token_embd, output, output_norm, "
              "rope_freqs and blk.N.attn_* / ffn_* tensors); the file is "
              "damaged or of another architecture";
      return false;
    }
    if (name->layer >= config.numLayers)
      return fail("tensor \"" + printable(tensor.name) + "\" belongs to a layer past "
                  "block_count " + std::to_string(config.numLayers));
  }
  return true;
}

/// Refuses metadata that changes the model's arithmetic in ways hetc does not
/// implement, so such a model fails at import instead of running with wrong
/// numbers: RoPE scaling other than none (or a linear factor of 1), value
/// heads of another size than key heads, and experts on a model whose layers
/// hold dense FFNs (or the reverse).
bool checkUnsupportedKeys(const GgufFile &file, const ModelConfig &config,
                          ConfigReader &read) {
  const std::string &arch = config.architecture;
  std::string scalingKey = arch + ".rope.scaling.type";
  std::string scaling = "none";
  if (const GgufValue *type = file.find(scalingKey)) {
    if (!type->asString())
      return read.fail("metadata key \"" + scalingKey +
                       "\" must be a string, got a " +
                       std::string(ggufTypeName(type->type())));
    scaling = std::string(*type->asString());
  }
  double factor = 1.0;
  for (const char *suffix : {".rope.scaling.factor", ".rope.scale_linear"}) {
    if (const GgufValue *value = file.find(arch + suffix)) {
      std::optional<double> number = value->asDouble();
      if (!number || !std::isfinite(*number) || *number < 0)
        return read.fail("metadata key \"" + arch + suffix +
                         "\" must be a finite non-negative number; fix the "
                         "metadata");
      if (*number != 0.0) {
        factor = *number;
        if (scaling == "none" && !file.find(scalingKey))
          scaling = "linear"; // llama.cpp's default when only a factor is set
      }
    }
  }
  bool identity = scaling == "none" || (scaling == "linear" && factor == 1.0);
  if (!identity) {
    std::ostringstream factorText;
    factorText << factor;
    return read.fail("RoPE scaling \"" + printable(scaling) + "\" (factor " +
                     factorText.str() + ", from \"" + scalingKey +
                     "\" and \"" + arch +
                     ".rope.scaling.factor\") is not supported; hetc runs "
                     "models with unscaled RoPE or llama3 frequency factors "
                     "(rope_freqs.weight)");
  }
  if (const GgufValue *value =
          file.find(arch + ".attention.value_length")) {
    std::optional<int64_t> length = value->asInt();
    if (!length || *length != config.headDim)
      return read.fail("metadata key \"" + arch +
                       ".attention.value_length\" is " +
                       (length ? std::to_string(*length) : "not an integer") +
                       " but attention.key_length is " +
                       std::to_string(config.headDim) +
                       "; hetc needs value heads of the key heads' size");
  }
  bool expertTensors = file.findTensor("blk.0.ffn_gate_inp.weight") != nullptr;
  int64_t experts = 0;
  if (const GgufValue *value = file.find(arch + ".expert_count")) {
    std::optional<int64_t> count = value->asInt();
    if (!count || *count < 0)
      return read.fail("metadata key \"" + arch +
                       ".expert_count\" must be a non-negative integer");
    experts = *count;
  }
  if (experts > 0 && !expertTensors)
    return read.fail("metadata key \"" + arch + ".expert_count\" is " +
                     std::to_string(experts) +
                     " but the layers hold dense FFNs (no "
                     "blk.0.ffn_gate_inp.weight); remove the key or "
                     "re-convert the model");
  if (experts == 0 && expertTensors)
    return read.fail("tensor \"blk.0.ffn_gate_inp.weight\" is an expert "
                     "router but metadata key \"" + arch +
                     ".expert_count\" is missing or 0; re-convert the model");
  return true;
}

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
    error = file.path() + ": architecture \"" + printable(config.architecture) +
            "\" is not supported (hetc imports llama, mistral and qwen2); "
            "give a model of one of these architectures";
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
      // Required, as in llama.cpp: a default would silently change every
      // norm of a file whose key was lost.
      !read.real("attention.layer_norm_rms_epsilon", config.rmsEpsilon,
                 std::nullopt, kRmsEpsilonRange) ||
      !read.real("rope.freq_base", config.ropeTheta, 10000.0f, kRopeBaseRange))
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
  if (!checkUnsupportedKeys(file, config, read))
    return std::nullopt;
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
  if (const GgufValue *vocab = file.find(config.architecture + ".vocab_size")) {
    std::optional<int64_t> count = vocab->asInt();
    if (!count || *count != config.vocabSize)
      return invalid("metadata key \"" + config.architecture +
                     ".vocab_size\" is " +
                     (count ? std::to_string(*count)
                            : "a " + std::string(ggufTypeName(vocab->type()))) +
                     " but token_embd.weight holds " +
                     std::to_string(config.vocabSize) +
                     " tokens; fix the metadata or re-convert the model");
  }
  if (config.contextLength > kMaxContextLength)
    return invalid("context_length (" + std::to_string(config.contextLength) +
                   ") is larger than the " + std::to_string(kMaxContextLength) +
                   " positions hetc addresses (positions are 32-bit); fix the "
                   "metadata");
  if (!checkTensors(file, config, error))
    return std::nullopt;
  config.tiedOutput = file.findTensor("output.weight") == nullptr;
  config.qkvBias = file.findTensor("blk.0.attn_q.bias") != nullptr;
  config.ropeFreqFactors = file.findTensor("rope_freqs.weight") != nullptr;
  return config;
}

} // namespace hetrt::format
