// The grammar of a model's tensor names, one parser for every reader: the
// importer's checks, the cost model's classes, the partitioner's units and the
// runtime's damage reports all agree on what a name means. Names are
// llama.cpp's (GGUF) for the llama family:
//
//   token_embd.weight | output.weight | output_norm.weight | rope_freqs.weight
//   blk.<layer>.<part>.weight | blk.<layer>.<part>.bias
//
// where <layer> is a decimal index without leading zeros and <part> one of
// the parts below. Anything else is not a tensor of these models.
#ifndef HETC_ABI_TENSORNAMES_H
#define HETC_ABI_TENSORNAMES_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace hetrt::format {

enum class TensorRole {
  Embedding,   // token_embd
  Output,      // output (the classifier)
  OutputNorm,  // output_norm
  RopeFactors, // rope_freqs (llama3 frequency factors, read by every layer)
  Norm,        // attn_norm, ffn_norm
  Attention,   // attn_q, attn_k, attn_v, attn_output
  Ffn,         // ffn_gate, ffn_up, ffn_down
  Router,      // ffn_gate_inp (mixture of experts)
  Experts,     // ffn_gate_exps, ffn_up_exps, ffn_down_exps
  Unused,      // attn_rot_embd (a RoPE table old converters stored; unread)
};

struct TensorName {
  /// The decoder layer, or -1 for the global tensors.
  int64_t layer = -1;
  TensorRole role = TensorRole::Norm;
  /// "attn_q", "token_embd", ...: the name without layer and suffix.
  std::string_view part;
  bool bias = false;
};

/// Parts a layer may hold, with their roles, and whether a bias is allowed.
struct LayerPart {
  std::string_view name;
  TensorRole role;
  bool mayHaveBias;
};
inline constexpr LayerPart kLayerParts[] = {
    {"attn_norm", TensorRole::Norm, false},
    {"attn_q", TensorRole::Attention, true},
    {"attn_k", TensorRole::Attention, true},
    {"attn_v", TensorRole::Attention, true},
    {"attn_output", TensorRole::Attention, true},
    {"attn_rot_embd", TensorRole::Unused, false},
    {"ffn_norm", TensorRole::Norm, false},
    {"ffn_gate", TensorRole::Ffn, false},
    {"ffn_up", TensorRole::Ffn, false},
    {"ffn_down", TensorRole::Ffn, false},
    {"ffn_gate_inp", TensorRole::Router, false},
    {"ffn_gate_exps", TensorRole::Experts, false},
    {"ffn_up_exps", TensorRole::Experts, false},
    {"ffn_down_exps", TensorRole::Experts, false},
};

/// Layers past this are refused by the grammar itself, so a layer index never
/// overflows wherever it is used.
inline constexpr int64_t kMaxTensorLayer = (int64_t(1) << 31) - 1;

/// The meaning of `name`, or nullopt when it is not a tensor name of the
/// grammar above.
inline std::optional<TensorName> parseTensorName(std::string_view name) {
  struct Global {
    std::string_view name;
    TensorRole role;
  };
  static constexpr Global kGlobals[] = {
      {"token_embd", TensorRole::Embedding},
      {"output", TensorRole::Output},
      {"output_norm", TensorRole::OutputNorm},
      {"rope_freqs", TensorRole::RopeFactors},
  };
  constexpr std::string_view kWeight = ".weight", kBias = ".bias";
  TensorName parsed;
  std::string_view stem;
  if (name.size() > kWeight.size() &&
      name.substr(name.size() - kWeight.size()) == kWeight) {
    stem = name.substr(0, name.size() - kWeight.size());
  } else if (name.size() > kBias.size() &&
             name.substr(name.size() - kBias.size()) == kBias) {
    stem = name.substr(0, name.size() - kBias.size());
    parsed.bias = true;
  } else {
    return std::nullopt;
  }
  constexpr std::string_view kLayerPrefix = "blk.";
  if (stem.substr(0, kLayerPrefix.size()) != kLayerPrefix) {
    if (parsed.bias)
      return std::nullopt;
    for (const Global &global : kGlobals)
      if (stem == global.name) {
        parsed.role = global.role;
        parsed.part = global.name;
        return parsed;
      }
    return std::nullopt;
  }
  std::string_view rest = stem.substr(kLayerPrefix.size());
  size_t digits = 0;
  int64_t layer = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
    layer = layer * 10 + (rest[digits] - '0');
    if (layer > kMaxTensorLayer)
      return std::nullopt;
    ++digits;
  }
  if (digits == 0 || (digits > 1 && rest[0] == '0') ||
      digits >= rest.size() || rest[digits] != '.')
    return std::nullopt;
  std::string_view part = rest.substr(digits + 1);
  for (const LayerPart &known : kLayerParts)
    if (part == known.name) {
      if (parsed.bias && !known.mayHaveBias)
        return std::nullopt;
      parsed.layer = layer;
      parsed.role = known.role;
      parsed.part = known.name;
      return parsed;
    }
  return std::nullopt;
}

} // namespace hetrt::format

#endif // HETC_ABI_TENSORNAMES_H
