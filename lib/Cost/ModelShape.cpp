// Model shapes from GGUF headers and Hugging Face configs (see ModelShape.h).
#include "hetc/Cost/ModelShape.h"

#include "abi/TensorNames.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/JsonText.h"

#include "runtime/format/Gguf.h"
#include "runtime/format/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hetc::cost {

using hetrt::format::BlockFormat;

uint64_t ModelShape::totalWeightBytes() const {
  uint64_t total = 0;
  for (const WeightInfo &weight : weights)
    total += weight.bytes;
  return total;
}

void classifyWeight(WeightInfo &weight) {
  using hetrt::format::TensorRole;
  std::optional<hetrt::format::TensorName> parsed =
      hetrt::format::parseTensorName(weight.name);
  // A name outside the grammar (hand-written IR) is a global table that
  // places nothing, as the final norm is.
  weight.layer = parsed ? static_cast<int>(parsed->layer) : -1;
  weight.role = WeightRole::Norm;
  if (!parsed)
    return;
  switch (parsed->role) {
  case TensorRole::Embedding:
    weight.role = WeightRole::Embedding;
    break;
  case TensorRole::Output:
    weight.role = WeightRole::Output;
    break;
  case TensorRole::Attention:
    weight.role = WeightRole::Attention;
    break;
  case TensorRole::Ffn:
  case TensorRole::Router:
    weight.role = WeightRole::Ffn;
    break;
  case TensorRole::Experts:
    weight.role = WeightRole::Experts;
    break;
  case TensorRole::OutputNorm:
  case TensorRole::RopeFactors:
  case TensorRole::Norm:
  case TensorRole::Unused:
    weight.role = WeightRole::Norm;
    break;
  }
}

namespace {

std::optional<BlockFormat> formatFor(const std::string &type,
                                     const std::string &name) {
  if (type == "f32")
    return BlockFormat::F32;
  if (type == "f16")
    return BlockFormat::F16;
  if (type == "bf16")
    return BlockFormat::BF16;
  if (type == "q8_0")
    return BlockFormat::Q8_0;
  if (type == "q4_0")
    return BlockFormat::Q4_0;
  if (type == "q4_k_m") {
    bool moreBits = name == "output.weight" ||
                    name.find("attn_v.weight") != std::string::npos ||
                    name.find("ffn_down") != std::string::npos;
    return moreBits ? BlockFormat::Q6_K : BlockFormat::Q4_K;
  }
  return std::nullopt;
}

/// Bytes of `elements` in `format`, rounding a partial block up (a planner
/// estimate; real files store whole blocks per row).
uint64_t storage(BlockFormat format, int64_t elements) {
  hetrt::format::BlockLayout layout = hetrt::format::blockLayout(format);
  int64_t blocks = (elements + layout.blockSize - 1) / layout.blockSize;
  return static_cast<uint64_t>(blocks * layout.bytesPerBlock);
}

} // namespace

std::optional<ModelShape> shapeFromGguf(const std::string &path,
                                        std::string &error) {
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(path, error);
  if (!file)
    return std::nullopt;
  std::optional<hetrt::format::ModelConfig> config =
      hetrt::format::ModelConfig::fromGguf(*file, error);
  if (!config)
    return std::nullopt;
  ModelShape shape;
  shape.origin = path;
  shape.architecture = config->architecture;
  shape.numLayers = config->numLayers;
  shape.dim = config->dim;
  shape.numHeads = config->numHeads;
  shape.numKvHeads = config->numKvHeads;
  shape.headDim = config->headDim;
  shape.ffnDim = config->ffnDim;
  shape.vocabSize = config->vocabSize;
  shape.tiedOutput = config->tiedOutput;
  shape.trainedContext = config->contextLength;
  for (const hetrt::format::GgufTensorInfo &tensor : file->tensors()) {
    WeightInfo weight;
    weight.name = tensor.name;
    weight.elements = tensor.numElements();
    weight.format = tensor.format;
    weight.bytes = tensor.sizeBytes;
    classifyWeight(weight);
    if (weight.layer >= shape.numLayers) {
      error = path + ": tensor \"" + tensor.name + "\" belongs to layer " +
              std::to_string(weight.layer) + " but the model has " +
              std::to_string(shape.numLayers) +
              " (block_count); the file is inconsistent";
      return std::nullopt;
    }
    if (weight.role == WeightRole::Experts && tensor.dims.size() == 3)
      shape.numExperts = std::max<int64_t>(shape.numExperts, tensor.dims[2]);
    shape.weights.push_back(weight);
  }
  if (shape.numExperts > 0) {
    std::string key = config->architecture + ".expert_used_count";
    const hetrt::format::GgufValue *value = file->find(key);
    std::optional<int64_t> used = value ? value->asInt() : std::nullopt;
    if (used && *used > 0)
      shape.expertsPerToken = *used;
    else {
      error = path + ": the model has " + std::to_string(shape.numExperts) +
              " experts per layer but no \"" + key +
              "\"; add the key (experts each token uses)";
      return std::nullopt;
    }
  }
  return shape;
}

std::optional<ModelShape> shapeFromHfConfig(const std::string &path,
                                            const std::string &weightType,
                                            std::string &error) {
  std::optional<std::string> text = hetrt::format::readRegularFile(
      path, "a Hugging Face config.json", uint64_t(16) << 20, error);
  if (!text)
    return std::nullopt;
  if (text->compare(0, 8, "HETCPACK") == 0) {
    error = path + ": is a compiled .hetpack; hetc plans a model from its "
                   "GGUF file or its Hugging Face config.json (give the GGUF "
                   "the pack was compiled from)";
    return std::nullopt;
  }
  std::string why;
  std::optional<nlohmann::json> parsed = hetrt::format::parseJsonText(*text, why);
  if (!parsed) {
    error = path + ": " + why + " (expected a Hugging Face config.json)";
    return std::nullopt;
  }
  nlohmann::json json = std::move(*parsed);
  if (!json.is_object()) {
    error = path + ": is not a JSON object (expected a Hugging Face "
                   "config.json)";
    return std::nullopt;
  }
  if (!formatFor(weightType, "")) {
    error = path + ": weight type \"" + weightType +
            "\" cannot be planned; use one of f32, f16, bf16, q8_0, q4_0, "
            "q4_k_m (--weight-type)";
    return std::nullopt;
  }
  // Bounds past every released model keep the products of sizes (bytes of
  // an expert stack, a KV cache) far inside 64 bits.
  auto limitOf = [](std::string_view key) -> int64_t {
    if (key == "num_hidden_layers")
      return 4096;
    if (key == "num_attention_heads" || key == "num_key_value_heads" ||
        key == "num_local_experts" || key == "num_experts_per_tok")
      return 4096;
    if (key == "head_dim")
      return 65536;
    if (key == "max_position_embeddings")
      return INT32_MAX; // positions are 32-bit
    return int64_t(1) << 24; // hidden, intermediate and vocabulary sizes
  };
  auto integer = [&](const char *key, bool required,
                     int64_t fallback) -> std::optional<int64_t> {
    auto found = json.find(key);
    if (found == json.end()) {
      if (!required)
        return fallback;
      error = path + ": field \"" + key + "\" is missing; fix: add it (a "
              "positive integer, as transformers writes it)";
      return std::nullopt;
    }
    if (!found->is_number_integer() || found->get<int64_t>() <= 0) {
      error = path + ": field \"" + key + "\": expected a positive integer, "
              "got " + found->dump() + "; fix: correct the value";
      return std::nullopt;
    }
    int64_t limit = limitOf(key);
    if (found->get<int64_t>() > limit) {
      error = path + ": field \"" + key + "\" is " + found->dump() +
              ", more than the " + std::to_string(limit) +
              " any model has; fix: correct the value";
      return std::nullopt;
    }
    return found->get<int64_t>();
  };
  ModelShape shape;
  shape.origin = path;
  shape.architecture = "llama";
  if (auto type = json.find("model_type"); type != json.end()) {
    if (!type->is_string()) {
      error = path + ": field \"model_type\": expected a string, got " +
              type->dump() + "; fix: give the architecture (\"llama\")";
      return std::nullopt;
    }
    shape.architecture = type->get<std::string>();
    // The planner models decoder-only transformers of these families; any
    // other would be planned as something it is not.
    static const char *const kKnown[] = {"llama", "mistral", "mixtral", "qwen2"};
    if (std::find(std::begin(kKnown), std::end(kKnown), shape.architecture) ==
        std::end(kKnown)) {
      error = path + ": field \"model_type\" is \"" +
              hetrt::format::printable(shape.architecture) +
              "\", which hetc cannot plan; fix: give a model of type llama, "
              "mistral, mixtral or qwen2";
      return std::nullopt;
    }
  }
  // The first problem is reported.
  std::optional<int64_t> dim, layers, heads, ffn, vocab;
  if (!(dim = integer("hidden_size", true, 0)) ||
      !(layers = integer("num_hidden_layers", true, 0)) ||
      !(heads = integer("num_attention_heads", true, 0)) ||
      !(ffn = integer("intermediate_size", true, 0)) ||
      !(vocab = integer("vocab_size", true, 0)))
    return std::nullopt;
  // Without head_dim, transformers splits hidden_size evenly over the heads.
  if (json.find("head_dim") == json.end() && *dim % *heads != 0) {
    error = path + ": field \"hidden_size\" (" + std::to_string(*dim) +
            ") is not a multiple of num_attention_heads (" +
            std::to_string(*heads) +
            "), and no head_dim says the size of a head; fix: correct either "
            "value, or add head_dim";
    return std::nullopt;
  }
  // Floats the model is defined by: present, they are positive and within
  // what any model uses (epsilons of 1e-12 to 1e-1, RoPE bases to 1e9).
  struct FloatRange {
    const char *key;
    hetrt::format::ModelFloatRange bounds;
  };
  for (FloatRange range :
       {FloatRange{"rms_norm_eps", hetrt::format::kRmsEpsilonRange},
        FloatRange{"rope_theta", hetrt::format::kRopeBaseRange}}) {
    auto found = json.find(range.key);
    if (found == json.end())
      continue;
    if (!found->is_number() || !(found->get<double>() > 0) ||
        !std::isfinite(found->get<double>())) {
      error = path + ": field \"" + range.key + "\": expected a positive "
              "number, got " + found->dump() + "; fix: correct the value";
      return std::nullopt;
    }
    double value = found->get<double>();
    if (value < range.bounds.low || value > range.bounds.high) {
      error = path + ": field \"" + range.key + "\" is " + found->dump() +
              ", outside the " + hetrt::format::readableNumber(range.bounds.low) +
              " to " + hetrt::format::readableNumber(range.bounds.high) +
              " models use; fix: correct the value";
      return std::nullopt;
    }
  }
  std::optional<int64_t> kvHeads, headDim, experts;
  if (!(kvHeads = integer("num_key_value_heads", false, *heads)) ||
      !(headDim = integer("head_dim", false, *dim / *heads)) ||
      !(experts = integer("num_local_experts", false, 0)))
    return std::nullopt;
  if (*heads % *kvHeads != 0) {
    error = path + ": field \"num_key_value_heads\" (" + std::to_string(*kvHeads) +
            ") does not divide num_attention_heads (" + std::to_string(*heads) +
            "); fix: correct either value";
    return std::nullopt;
  }
  shape.dim = *dim;
  shape.numLayers = *layers;
  shape.numHeads = *heads;
  shape.numKvHeads = *kvHeads;
  shape.headDim = *headDim;
  shape.ffnDim = *ffn;
  shape.vocabSize = *vocab;
  std::optional<int64_t> trained = integer("max_position_embeddings", false, 0);
  if (!trained)
    return std::nullopt;
  shape.trainedContext = *trained;
  if (auto tied = json.find("tie_word_embeddings"); tied != json.end()) {
    if (!tied->is_boolean()) {
      error = path + ": field \"tie_word_embeddings\": expected true or "
              "false, got " + tied->dump() + "; fix: correct the value";
      return std::nullopt;
    }
    shape.tiedOutput = tied->get<bool>();
  }
  shape.numExperts = *experts;
  if (shape.architecture == "mixtral" && shape.numExperts == 0) {
    error = path + ": model_type \"mixtral\" is a mixture of experts, but "
            "num_local_experts is missing; fix: add num_local_experts and "
            "num_experts_per_tok (8 and 2 for Mixtral 8x7B), or give "
            "model_type \"mistral\" for a dense model";
    return std::nullopt;
  }
  // RoPE scaling changes positions, not the work of a step, so the planner
  // takes any kind transformers defines; anything else is a damaged file.
  if (auto scaling = json.find("rope_scaling");
      scaling != json.end() && !scaling->is_null()) {
    static const char *const kScalingTypes[] = {
        "default", "linear", "dynamic", "yarn", "longrope", "su", "llama3"};
    const nlohmann::json *type = nullptr;
    if (scaling->is_object())
      for (const char *key : {"rope_type", "type"})
        if (auto found = scaling->find(key); found != scaling->end()) {
          type = &*found;
          break;
        }
    if (!type || !type->is_string() ||
        std::find_if(std::begin(kScalingTypes), std::end(kScalingTypes),
                     [&](const char *known) {
                       return type->get<std::string>() == known;
                     }) == std::end(kScalingTypes)) {
      error = path + ": field \"rope_scaling\" is " +
              hetrt::format::printable(scaling->dump()) +
              ", not a RoPE scaling transformers defines; fix: give null, or "
              "an object whose \"rope_type\" is one of default, linear, "
              "dynamic, yarn, longrope, su or llama3";
      return std::nullopt;
    }
  }
  if (shape.numExperts > 0) {
    std::optional<int64_t> used = integer("num_experts_per_tok", true, 0);
    if (!used)
      return std::nullopt;
    if (*used > shape.numExperts) {
      error = path + ": field \"num_experts_per_tok\" (" +
              std::to_string(*used) + ") is more than num_local_experts (" +
              std::to_string(shape.numExperts) + "); fix: correct either value";
      return std::nullopt;
    }
    shape.expertsPerToken = *used;
  }

  auto add = [&](const std::string &name, int64_t elements, bool isNorm) {
    WeightInfo weight;
    weight.name = name;
    weight.elements = elements;
    // Norms stay f32 in every quantized file.
    weight.format = isNorm ? BlockFormat::F32 : *formatFor(weightType, name);
    weight.bytes = storage(weight.format, elements);
    classifyWeight(weight);
    shape.weights.push_back(weight);
  };
  int64_t qDim = shape.numHeads * shape.headDim;
  int64_t kvDim = shape.numKvHeads * shape.headDim;
  add("token_embd.weight", shape.vocabSize * shape.dim, false);
  for (int64_t layer = 0; layer < shape.numLayers; ++layer) {
    std::string prefix = "blk." + std::to_string(layer) + ".";
    add(prefix + "attn_norm.weight", shape.dim, true);
    add(prefix + "attn_q.weight", qDim * shape.dim, false);
    add(prefix + "attn_k.weight", kvDim * shape.dim, false);
    add(prefix + "attn_v.weight", kvDim * shape.dim, false);
    add(prefix + "attn_output.weight", shape.dim * qDim, false);
    add(prefix + "ffn_norm.weight", shape.dim, true);
    if (shape.numExperts > 0) {
      int64_t expert = shape.numExperts * shape.ffnDim * shape.dim;
      add(prefix + "ffn_gate_inp.weight", shape.numExperts * shape.dim, true);
      add(prefix + "ffn_gate_exps.weight", expert, false);
      add(prefix + "ffn_up_exps.weight", expert, false);
      add(prefix + "ffn_down_exps.weight", expert, false);
    } else {
      add(prefix + "ffn_gate.weight", shape.ffnDim * shape.dim, false);
      add(prefix + "ffn_up.weight", shape.ffnDim * shape.dim, false);
      add(prefix + "ffn_down.weight", shape.dim * shape.ffnDim, false);
    }
  }
  add("output_norm.weight", shape.dim, true);
  if (!shape.tiedOutput)
    add("output.weight", shape.vocabSize * shape.dim, false);
  return shape;
}

std::optional<ModelShape> loadModelShape(const std::string &path,
                                         const std::string &weightType,
                                         std::string &error) {
  if (path.size() >= 5 && path.substr(path.size() - 5) == ".gguf")
    return shapeFromGguf(path, error);
  return shapeFromHfConfig(path, weightType, error);
}

} // namespace hetc::cost
