// `hetc synth`: writes a synthetic Llama-shaped GGUF model.
#include "Commands.h"
#include "Flags.h"

#include "hetc/Synth/SyntheticModel.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/OutputFile.h"
#include "runtime/tokenizer/SyntheticVocab.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace hetc::cli {

namespace {
struct SynthFlags {
  synth::SyntheticModelSpec spec;
  std::string type = "f32";
  std::string output;
};
} // namespace

Action registerSynthCommand(CLI::App &app) {
  auto flags = std::make_shared<SynthFlags>();
  synth::SyntheticModelSpec &spec = flags->spec;
  CLI::App *command = app.add_subcommand(
      "synth", "Write a synthetic Llama-shaped model with deterministic "
               "pseudo-random weights and a valid tokenizer");
  command->add_option("--arch", spec.architecture,
                      "Architecture: llama, or qwen2 (Q/K/V biases, NeoX RoPE)");
  command->add_option("--dim", spec.dim, "Embedding dimension")
      ->check(wholeRange(1, 65536));
  command->add_option("--layers", spec.layers, "Decoder layers")
      ->check(wholeRange(1, 1024));
  command->add_option("--heads", spec.heads, "Attention heads")
      ->check(wholeRange(1, 1024));
  command->add_option("--kv-heads", spec.kvHeads,
                      "Key/value heads (grouped-query attention)")
      ->check(wholeRange(1, 1024));
  command->add_option("--ffn", spec.ffnDim, "Feed-forward hidden size")
      ->check(wholeRange(1, 1 << 20));
  command->add_option("--vocab", spec.vocabSize, "Vocabulary size")
      ->check(wholeRange(hetrt::tokenizer::kMinimumSyntheticVocab, 1 << 20));
  command->add_option("--context", spec.contextLength, "Context length")
      ->check(wholeRange(1, INT32_MAX));
  command->add_option("--rope-base", spec.ropeBase, "RoPE frequency base")
      ->check(finiteRange(hetrt::format::kRopeBaseRange.low,
                          hetrt::format::kRopeBaseRange.high));
  command->add_flag("--tied", spec.tiedOutput,
                    "Tie the output projection to the token embedding");
  command->add_option("--type", flags->type,
                      "Weight type: f32, f16, bf16, q8_0, q4_0, q2_k, q3_k_m, "
                      "q4_k_m, q5_k_m (the k-quants mixed as llama.cpp does)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q2_k",
                             "q3_k_m", "q4_k_m", "q5_k_m"}));
  command->add_option("--seed", spec.seed, "Seed of the weights")
      ->check(wholeRange(0, INT64_MAX));
  command->add_option("-o,--output", flags->output, "The GGUF file to write")
      ->check(outputFileName())
      ->required();
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    synth::parseWeightType(flags->type, flags->spec.weightType);
    std::string error;
    // Flags that contradict each other are usage errors, as a bad flag is.
    if (!synth::checkSyntheticModelSpec(flags->spec, error)) {
      std::cerr << "hetc synth: " << error << "\n";
      return 2;
    }
    if (!hetrt::format::checkOutputPath(flags->output, {}, "-o", error) ||
        !hetrt::format::checkReplaceable(flags->output, "GGUF", "a GGUF model",
                                         "-o", error)) {
      std::cerr << "hetc synth: " << error << "\n";
      return 1;
    }
    if (!synth::writeSyntheticModel(flags->spec, flags->output, error)) {
      std::cerr << "hetc synth: " << error << "\n";
      return 1;
    }
    return 0;
  };
}

} // namespace hetc::cli
