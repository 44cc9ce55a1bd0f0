// The options `hetc plan` and `hetc simulate` share, and their loading.
#include "PlanningOptions.h"
#include "Flags.h"

#include "runtime/core/Limits.h"
#include "runtime/format/Manifest.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace hetc::cli {

void addPlanningOptions(CLI::App &command, PlanningFlags &flags) {
  command.add_option("model", flags.model, "A .gguf file or a config.json")
      ->required()
      ->check(hetc::cli::inputFile("a GGUF model or a Hugging Face config.json"));
  command
      .add_option("--system", flags.system,
                  "A system JSON, or the name of one in the catalog "
                  "(e.g. rtx4090-ryzen; `hetc calibrate` writes one for this "
                  "machine)")
      ->required();
  command.add_option("--catalog", flags.catalog,
                     "The hardware catalog directory (default: hetc's own)")
      ->check(hetc::cli::nonEmptyPath("the hardware catalog directory"));
  command
      .add_option("--weight-type", flags.weightType,
                  "Weight type to plan a config.json with")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"}))
      ->capture_default_str();
  command
      .add_option("--kv-type", flags.kvType,
                  "KV-cache element type the plan counts, as hetc compile "
                  "--kv-type packs it")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  addObjectiveOption(command, flags.objective, "");
  command.add_option("--batch", flags.batch, "Sequences decoded together")
      ->check(wholeRange(1, int64_t(1) << 20))
      ->capture_default_str();
  command.add_option("--prompt-tokens", flags.promptTokens,
                     "Prompt length of the prefill")
      ->check(wholeRange(1, INT32_MAX))
      ->capture_default_str();
  addDeviceMemoryOption(command, flags.deviceMemory, "");
  addComputeDevicesOption(command, flags.computeDevices, "");
}

std::optional<PlanningInputs> loadPlanningInputs(const PlanningFlags &flags,
                                                 std::string &error,
                                                 int &exitCode) {
  exitCode = 1;
  std::string catalog =
      flags.catalog.empty() ? hardware::defaultCatalogDir() : flags.catalog;
  std::optional<hardware::System> system =
      hardware::findSystem(flags.system, catalog, error);
  if (!system)
    return std::nullopt;
  std::vector<std::string> warnings;
  if (!hardware::applyDeviceMemoryCaps(flags.deviceMemory, *system, warnings,
                                       error)) {
    exitCode = 2;
    return std::nullopt;
  }
  if (!hardware::restrictComputeDevices(flags.computeDevices, *system,
                                        error)) {
    exitCode = 2;
    return std::nullopt;
  }
  for (const std::string &warning : warnings)
    hetc::cli::printMessage("hetc: warning: %s\n", warning.c_str());
  std::optional<cost::ModelShape> shape =
      cost::loadModelShape(flags.model, flags.weightType, error);
  if (!shape)
    return std::nullopt;
  // The option's check admits only names parseObjective knows.
  return PlanningInputs{
      std::move(*system), std::move(*shape),
      *partition::parseObjective(flags.objective),
      static_cast<double>(hetrt::format::kvElementBytesOf(flags.kvType))};
}

void warnPastTrainedContext(const cost::ModelShape &shape,
                            const cost::Workload &workload,
                            const std::string &tool) {
  if (shape.trainedContext <= 0 || workload.kvTokens() <= shape.trainedContext)
    return;
  hetc::cli::printMessage(
               "%s: warning: the request holds %lld tokens of context but %s "
               "was trained for %lld; text past that length may degrade\n",
               tool.c_str(), static_cast<long long>(workload.kvTokens()),
               shape.origin.c_str(),
               static_cast<long long>(shape.trainedContext));
}

KvCacheModel kvCacheModel(const partition::ModelPlan &plan,
                          const PlanningInputs &inputs,
                          const PlanningFlags &flags,
                          const cost::Workload &workload) {
  KvCacheModel kv;
  kv.elementType = flags.kvType;
  kv.blockTokens = hetrt::format::kDefaultKvBlockSize;
  kv.poolBlocks = workload.batch * workload.kvPositions() / kv.blockTokens;
  kv.tiers = partition::planKvTiers(plan, inputs.system, inputs.shape,
                                    inputs.kvElementBytes, kv.blockTokens,
                                    workload.kvPositions());
  return kv;
}

nlohmann::json kvCacheJson(const KvCacheModel &kv) {
  return {{"element_type", kv.elementType},
          {"block_tokens", kv.blockTokens},
          {"block_bytes", kv.tiers.blockBytes},
          {"pool_blocks", kv.poolBlocks},
          {"host_tier_blocks", kv.tiers.hostBlocks},
          {"host_tier_format", kv.tiers.int8 ? "int8" : "exact"},
          {"host_tier_block_bytes", kv.tiers.tierBlockBytes},
          {"restore_seconds", kv.tiers.restoreSeconds}};
}

std::string kvCacheLine(const KvCacheModel &kv, double decodeStepSeconds) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "KV cache (%s): blocks of %lld positions, %s each; a pool of "
                "%lld blocks, and a host tier of %lld blocks for idle "
                "sequences",
                kv.elementType.c_str(), static_cast<long long>(kv.blockTokens),
                hetrt::core::formatBytes(kv.tiers.blockBytes).c_str(),
                static_cast<long long>(kv.poolBlocks),
                static_cast<long long>(kv.tiers.hostBlocks));
  std::string text = line;
  // The tier's format, and why: what a sequence's return costs the link.
  if (kv.tiers.restoreSeconds > 0) {
    std::snprintf(line, sizeof(line),
                  ", kept %s: a sequence's cache comes back over %s in "
                  "%.3g ms, %s a decode step (%.3g ms)",
                  kv.tiers.int8 ? "as int8 rows (lossy)" : "exact",
                  kv.tiers.slowestLink.c_str(), kv.tiers.restoreSeconds * 1e3,
                  kv.tiers.int8 ? "longer than" : "within",
                  decodeStepSeconds * 1e3);
    text += line;
  }
  return text;
}

} // namespace hetc::cli
