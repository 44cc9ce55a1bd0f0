// `hetc info MODEL`: what a GGUF model is (architecture, shapes, tensor
// types, tokenizer, chat template) and the memory it needs at a context, read
// from its header and metadata without loading the weights; for a pack, also
// what it was compiled for and which of its code this CPU runs.
#include "Commands.h"
#include "Flags.h"
#include "PackCache.h"

#include "hetc/Pipeline/Compile.h"
#include "runtime/core/Limits.h"
#include "runtime/core/Model.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

namespace hetc::cli {

namespace {

struct InfoFlags {
  std::string model;
  int64_t contextLength = 0;
  bool json = false;
};


} // namespace

Action registerInfoCommand(CLI::App &app) {
  auto flags = std::make_shared<InfoFlags>();
  CLI::App *command = app.add_subcommand(
      "info", "Describe a model: architecture, shapes, tensor types, tokenizer, "
              "chat template, and the memory it needs at a context");
  addModelArgument(command, flags->model, "A .gguf model, or a .hetpack (its model is described)");
  command->add_option("-c,--context,--ctx-size", flags->contextLength,
                      "Context for the memory figures (0: the model's)")
      ->check(wholeRange(0, INT32_MAX));
  command->add_flag("--json", flags->json, "Print one JSON object");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string error;
    std::string path = flags->model;
    // A pack is checked exactly as the runners check it (checksums, the
    // code's structure and record, its CPU features, the model file's hash),
    // so `info` never describes a pack that `run` would refuse.
    std::unique_ptr<hetrt::core::Model> packed;
    if (isPack(path)) {
      packed = hetrt::core::Model::load(path, "", error);
      if (!packed) {
        std::cerr << "hetc info: " << error << "\n";
        return 1;
      }
      if (flags->contextLength == 0)
        flags->contextLength = packed->manifest().contextLength;
      path = packed->manifest().weightsPath;
    }
    std::unique_ptr<hetrt::format::GgufFile> file =
        hetrt::format::GgufFile::open(path, error);
    if (!file) {
      std::cerr << "hetc info: " << error << "\n";
      return 1;
    }
    std::optional<hetrt::format::ModelConfig> config =
        hetrt::format::ModelConfig::fromGguf(*file, error);
    if (!config) {
      std::cerr << "hetc info: " << error << "\n";
      return 1;
    }
    std::unique_ptr<hetrt::tokenizer::Tokenizer> tokenizer =
        hetrt::tokenizer::Tokenizer::fromGguf(*file, error);
    if (!tokenizer) {
      std::cerr << "hetc info: " << error << "\n";
      return 1;
    }
    int64_t context =
        flags->contextLength > 0 ? flags->contextLength : config->contextLength;
    std::map<std::string, std::pair<int64_t, uint64_t>> types;
    uint64_t weightBytes = 0;
    for (const hetrt::format::GgufTensorInfo &tensor : file->tensors()) {
      auto &[count, bytes] = types[std::string(
          hetrt::format::blockLayout(tensor.format).name)];
      ++count;
      bytes += tensor.sizeBytes;
      weightBytes += tensor.sizeBytes;
    }
    // A pack's own cache; a model's as a pack compiled with the defaults
    // would keep it.
    std::string kvElementType =
        packed ? packed->manifest().kvElementType
               : pipeline::defaultKvElementType(pipeline::CompileOptions());
    std::optional<uint64_t> kvBytes = hetrt::core::kvCacheBytes(
        config->numLayers, context, config->numKvHeads, config->headDim,
        hetrt::format::kvElementBytesOf(kvElementType));
    const hetrt::format::GgufValue *templateValue =
        file->find("tokenizer.chat_template");
    bool hasTemplate = templateValue && templateValue->asString() &&
                       !templateValue->asString()->empty();
    const char *vocabKind =
        tokenizer->kind() == hetrt::tokenizer::VocabKind::Spm ? "spm" : "bpe";

    if (flags->json) {
      nlohmann::json typeList = nlohmann::json::object();
      for (const auto &[name, entry] : types)
        typeList[name] = {{"tensors", entry.first}, {"bytes", entry.second}};
      nlohmann::json result = {
          {"path", path},
          {"architecture", config->architecture},
          {"dim", config->dim},
          {"layers", config->numLayers},
          {"heads", config->numHeads},
          {"kv_heads", config->numKvHeads},
          {"head_dim", config->headDim},
          {"ffn_dim", config->ffnDim},
          {"vocab_size", config->vocabSize},
          {"trained_context", config->contextLength},
          {"rope_theta", config->ropeTheta},
          {"tied_output", config->tiedOutput},
          {"tensor_types", typeList},
          {"weight_bytes", weightBytes},
          {"tokenizer", {{"model", vocabKind},
                         {"tokens", tokenizer->vocabSize()},
                         {"bos", tokenizer->bos()},
                         {"eos", tokenizer->eos()}}},
          {"chat_template", hasTemplate},
          {"context", context},
          {"kv_cache_bytes", kvBytes ? nlohmann::json(*kvBytes) : nlohmann::json()},
          {"kv_element_type", kvElementType},
      };
      if (packed) {
        nlohmann::json variants = nlohmann::json::array();
        for (const hetrt::format::CodeVariant &variant :
             packed->manifest().variants)
          variants.push_back(variant.name);
        result["pack"] = {{"path", flags->model},
                          {"context", packed->manifest().contextLength},
                          {"variants", variants},
                          {"runs_here", packed->code().variantName()}};
      }
      std::cout << result.dump(2) << "\n";
      return 0;
    }
    std::printf("%s\n", path.c_str());
    std::printf("  architecture   %s, %lld layers, dim %lld, %lld heads "
                "(%lld KV heads) of %lld, FFN %lld, vocabulary %lld\n",
                config->architecture.c_str(),
                static_cast<long long>(config->numLayers),
                static_cast<long long>(config->dim),
                static_cast<long long>(config->numHeads),
                static_cast<long long>(config->numKvHeads),
                static_cast<long long>(config->headDim),
                static_cast<long long>(config->ffnDim),
                static_cast<long long>(config->vocabSize));
    std::printf("  trained for    %lld tokens of context, RoPE base %g%s\n",
                static_cast<long long>(config->contextLength),
                static_cast<double>(config->ropeTheta),
                config->tiedOutput ? ", output tied to the embedding" : "");
    std::printf("  tensors        %zu, %s:", file->tensors().size(),
                hetrt::core::formatBytes(weightBytes).c_str());
    for (const auto &[name, entry] : types)
      std::printf(" %s x%lld (%s)", name.c_str(),
                  static_cast<long long>(entry.first),
                  hetrt::core::formatBytes(entry.second).c_str());
    std::printf("\n  tokenizer      %s, %d tokens, BOS %d, EOS %d\n", vocabKind,
                tokenizer->vocabSize(), tokenizer->bos(), tokenizer->eos());
    std::printf("  chat template  %s\n", hasTemplate ? "present" : "none");
    std::printf("  memory         at a context of %lld: KV cache %s (%s), "
                "with the weights %s\n",
                static_cast<long long>(context),
                kvBytes ? hetrt::core::formatBytes(*kvBytes).c_str() : "too large",
                kvElementType.c_str(),
                kvBytes ? hetrt::core::formatBytes(*kvBytes + weightBytes).c_str()
                        : "too large");
    if (packed) {
      std::string variants;
      for (const hetrt::format::CodeVariant &variant :
           packed->manifest().variants)
        variants += (variants.empty() ? "" : ", ") + variant.name;
      std::printf("  pack           %s: compiled for a context of %lld, code "
                  "for %s; this CPU runs %s\n",
                  flags->model.c_str(),
                  static_cast<long long>(packed->manifest().contextLength),
                  variants.c_str(), packed->code().variantName().c_str());
      const hetrt::format::Manifest &manifest = packed->manifest();
      if (manifest.spirv) {
        std::string libraries;
        for (const hetrt::format::SpirvLibrary &library :
             manifest.spirv->libraries)
          libraries += (libraries.empty() ? "" : ", ") + library.variant;
        std::printf("  SPIR-V         programs of %zu kernels in variants %s, "
                    "for Vulkan devices (hetc run --device vulkan0)\n",
                    manifest.spirv->kernels.size(), libraries.c_str());
      }
      for (auto [name, code] :
           {std::pair{"NVIDIA", &manifest.nvptx},
            std::pair{"AMD", &manifest.amdgpu}}) {
        if (!*code)
          continue;
        std::string builds;
        for (const hetrt::format::GpuLibrary &library : (*code)->libraries)
          builds += (builds.empty() ? "" : ", ") + library.variant + " " +
                    library.format;
        std::printf("  %-14s kernel library of %zu kernels: %s, for the "
                    "plan's GPU segments\n",
                    name, (*code)->kernels.size(), builds.c_str());
      }
      if (manifest.plan) {
        std::string units;
        for (const auto &[device, count] : manifest.plan->units)
          units += (units.empty() ? "" : ", ") + device + " " +
                   std::to_string(count);
        std::printf("  plan           on %s: units %s; %zu CPU segment entry "
                    "points (hetc run --system)\n",
                    manifest.plan->system.c_str(), units.c_str(),
                    manifest.plan->cpuKernels.size());
      }
    }
    return 0;
  };
}

} // namespace hetc::cli
