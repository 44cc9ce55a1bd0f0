// `hetc plan MODEL --system SYS`: what the cost model predicts for a model on
// each device of a system — memory held, prefill and decode speed, energy and
// price per token, and what limits each — from the model's shapes alone.
#include "Commands.h"
#include "Flags.h"
#include "PlanningOptions.h"

#include "hetc/Cost/CostModel.h"
#include "hetc/Cost/ModelShape.h"
#include "hetc/Hardware/Catalog.h"
#include "hetc/Partition/ModelPlan.h"
#include "hetc/Pipeline/Compile.h"
#include "runtime/core/Limits.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace hetc::cli {

namespace {

struct PlanFlags : PlanningFlags {
  int64_t context = 512;
  bool json = false;
};

/// The model run entirely by one device: where its bytes go and how fast it is.
struct DevicePlan {
  std::string id;
  const hardware::Device *device = nullptr;
  uint64_t weightBytes = 0;
  uint64_t kvBytes = 0;
  uint64_t capacityBytes = 0;
  bool fits = false;
  uint64_t shortfallBytes = 0;
  /// Per unit, the tier its weights are read from.
  std::vector<int> weightTier;
  int kvTier = 0;
  double prefillTokensPerS = 0;
  double decodeTokensPerS = 0;
  double joulesPerToken = 0;
  double usdPerMillionTokens = 0;
  std::string limit;
};

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

/// `samplingSeconds`: what the system's host spends choosing each step's
/// tokens, which the device waits for whichever it is.
DevicePlan planOn(const std::string &id, const hardware::Device &device,
                  const cost::ModelShape &shape, const cost::Workload &workload,
                  double samplingSeconds, double kvElement) {
  DevicePlan plan;
  plan.id = id;
  plan.device = &device;
  std::vector<cost::Unit> units = cost::unitsOf(shape, kvElement);
  plan.kvBytes = static_cast<uint64_t>(
      static_cast<double>(workload.batch) *
      static_cast<double>(workload.kvPositions()) *
      static_cast<double>(shape.numLayers) * shape.kvBytesPerTokenLayer(kvElement));
  for (const cost::Unit &unit : units)
    plan.weightBytes += unit.weightBytes;
  // The KV cache takes the home tier first (it is read every step); weights
  // fill the tiers in order, fastest first.
  std::vector<uint64_t> free;
  for (const hardware::MemoryTier &tier : device.memory) {
    free.push_back(tier.capacityBytes);
    plan.capacityBytes += tier.capacityBytes;
  }
  uint64_t needed = plan.weightBytes + plan.kvBytes;
  if (needed > plan.capacityBytes) {
    plan.shortfallBytes = needed - plan.capacityBytes;
    plan.limit = "capacity: needs " + gib(needed) + ", the device's tiers hold " +
                 gib(plan.capacityBytes);
    return plan;
  }
  plan.fits = true;
  for (size_t t = 0; t < free.size(); ++t)
    if (free[t] >= plan.kvBytes) {
      free[t] -= plan.kvBytes;
      plan.kvTier = static_cast<int>(t);
      break;
    }
  for (const cost::Unit &unit : units) {
    size_t t = 0;
    while (t + 1 < free.size() && free[t] < unit.weightBytes)
      ++t;
    if (free[t] < unit.weightBytes) {
      // Fits in total but not unit by unit: the last tier takes the rest.
      t = free.size() - 1;
    }
    free[t] -= std::min(free[t], unit.weightBytes);
    plan.weightTier.push_back(static_cast<int>(t));
  }
  cost::Efficiency efficiency;
  double memoryTime = 0, computeTime = 0, attentionTime = 0, overheadTime = 0,
         prefillSeconds = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const hardware::MemoryTier &weights = device.memory[plan.weightTier[i]];
    const hardware::MemoryTier &kv = device.memory[plan.kvTier];
    cost::Estimate step = cost::decodeStep(units[i], workload, device, weights, kv, efficiency);
    if (step.memoryBound())
      memoryTime += step.memorySeconds;
    else
      computeTime += step.computeSeconds;
    attentionTime += step.attentionSeconds;
    overheadTime += step.overheadSeconds;
    prefillSeconds +=
        cost::prefill(units[i], workload, device, weights, kv, efficiency).seconds();
  }
  double stepSeconds =
      memoryTime + computeTime + attentionTime + overheadTime + samplingSeconds;
  plan.decodeTokensPerS = static_cast<double>(workload.batch) / stepSeconds;
  plan.prefillTokensPerS =
      static_cast<double>(workload.batch * workload.promptTokens) / prefillSeconds;
  double secondsPerToken = stepSeconds / static_cast<double>(workload.batch);
  plan.joulesPerToken = device.activeWatts * secondsPerToken;
  plan.usdPerMillionTokens = device.priceUsdPerHour / 3600 * secondsPerToken * 1e6;
  if (samplingSeconds >= std::max({memoryTime, computeTime, attentionTime, overheadTime}))
    plan.limit = "sampling the tokens";
  else if (attentionTime >= std::max({memoryTime, computeTime, overheadTime}))
    plan.limit = "attention over the KV cache";
  else if (overheadTime >= memoryTime && overheadTime >= computeTime)
    plan.limit = "kernel dispatch overhead";
  else if (memoryTime >= computeTime)
    plan.limit = "memory bandwidth of " + device.memory[plan.weightTier.back()].name;
  else
    plan.limit = "compute";
  return plan;
}

} // namespace

Action registerPlanCommand(CLI::App &app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App *command = app.add_subcommand(
      "plan", "Predict where and how fast a model runs on a system, from its "
              "shapes alone (a GGUF header or a Hugging Face config.json)");
  addPlanningOptions(*command, *flags);
  command->add_option("--context", flags->context,
                      "Tokens in the KV cache at the decode step predicted "
                      "(at least the prompt; a shorter one shortens the "
                      "default prompt)")
      ->check(wholeRange(0, INT32_MAX))
      ->capture_default_str();
  command->add_flag("--json", flags->json,
                    "Print the plan as JSON (schema in docs/planning.md)");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    // The decode step follows the prefill, so the cache holds the prompt: a
    // short --context shortens the default prompt, and contradicts one given.
    if (flags->context > 0 && flags->context < flags->promptTokens &&
        command->count("--prompt-tokens") == 0)
      flags->promptTokens = flags->context;
    if (flags->context < flags->promptTokens) {
      std::cerr << "hetc plan: --context " << flags->context
                << " holds fewer tokens than the --prompt-tokens "
                << flags->promptTokens
                << " prefilled before the decode step; give --context at "
                   "least "
                << flags->promptTokens << "\n";
      return 2;
    }
    std::string error;
    int exitCode = 1;
    std::optional<PlanningInputs> inputs =
        loadPlanningInputs(*flags, error, exitCode);
    if (!inputs) {
      std::cerr << "hetc plan: " << error << "\n";
      return exitCode;
    }
    const hardware::System *system = &inputs->system;
    const cost::ModelShape *shape = &inputs->shape;
    cost::Workload workload{flags->batch, flags->context, flags->promptTokens};
    warnPastTrainedContext(*shape, workload, "hetc plan");
    partition::PlanRequest request;
    request.workload = workload;
    request.objective = inputs->objective;
    request.kvElementBytes = inputs->kvElementBytes;
    std::optional<partition::ModelPlan> placed =
        partition::planModel(*shape, *system, request, error);
    if (!placed) {
      std::cerr << "hetc plan: " << error << "\n";
      return 3;
    }
    const partition::ModelPlan &plan = *placed;
    // The plan's host samples the tokens whichever device runs the model.
    std::vector<DevicePlan> plans;
    for (const hardware::SystemDevice &entry : system->devices)
      plans.push_back(planOn(entry.id, entry.device, *shape, workload,
                             plan.samplingSeconds, inputs->kvElementBytes));
    auto memoryName = [&](int memory) { return plan.memories[memory].name; };
    KvCacheModel kvCache = kvCacheModel(plan, *inputs, *flags, workload);

    // The devices units may run on (--compute-devices; all by default).
    std::vector<std::string> computing;
    for (const hardware::SystemDevice &entry : system->devices)
      if (entry.computes)
        computing.push_back(entry.id);

    if (flags->json) {
      nlohmann::json alone = nlohmann::json::array();
      for (const DevicePlan &single : plans) {
        nlohmann::json entry = {{"id", single.id},
                                {"device", single.device->name},
                                {"fits", single.fits},
                                {"limit", single.limit}};
        if (single.fits) {
          entry["prefill_tokens_per_s"] = single.prefillTokensPerS;
          entry["decode_tokens_per_s"] = single.decodeTokensPerS;
        } else {
          entry["shortfall_bytes"] = single.shortfallBytes;
        }
        alone.push_back(entry);
      }
      nlohmann::json devices = nlohmann::json::array();
      for (size_t d = 0; d < plan.devices.size(); ++d) {
        const partition::DeviceUse &device = plan.devices[d];
        nlohmann::json memories = nlohmann::json::array();
        uint64_t held = 0, capacity = 0;
        for (const partition::MemoryUse &memory : plan.memories) {
          if (memory.device != static_cast<int>(d))
            continue;
          held += memory.weightBytes + memory.kvBytes +
                  memory.streamBufferBytes;
          capacity += memory.capacityBytes;
          memories.push_back(
              {{"name", memory.name},
               {"weight_bytes", memory.weightBytes},
               {"kv_bytes", memory.kvBytes},
               {"stream_buffer_bytes", memory.streamBufferBytes},
               {"capacity_bytes", memory.capacityBytes}});
        }
        devices.push_back({{"id", device.id},
                           {"device", device.device->name},
                           {"units", device.units},
                           {"bytes_held", held},
                           {"capacity_bytes", capacity},
                           {"memories", memories},
                           {"decode_seconds_per_step", device.decodeSeconds},
                           {"prefill_seconds", device.prefillSeconds},
                           {"utilization", device.utilization}});
      }
      nlohmann::json ops = nlohmann::json::array();
      nlohmann::json weights = nlohmann::json::array();
      nlohmann::json kv = nlohmann::json::array();
      for (const partition::PlacedUnit &unit : plan.units) {
        ops.push_back({{"unit", unit.unit.name},
                       {"device", plan.devices[unit.device].id},
                       {"decode_seconds", unit.decodeSeconds},
                       {"prefill_seconds", unit.prefillSeconds}});
        weights.push_back({{"unit", unit.unit.name},
                           {"bytes", unit.unit.weightBytes},
                           {"residency", unit.streamed ? "streamed" : "resident"},
                           {"memory", memoryName(unit.weightMemory)}});
        if (unit.kvMemory >= 0)
          kv.push_back({{"unit", unit.unit.name},
                        {"memory", memoryName(unit.kvMemory)}});
      }
      nlohmann::json out = {
          {"schema", "hetc.plan/2"},
          {"model", {{"path", flags->model},
                     {"architecture", shape->architecture},
                     {"layers", shape->numLayers},
                     {"weight_bytes", shape->totalWeightBytes()}}},
          {"system", system->name},
          {"compute_devices", computing},
          {"objective", flags->objective},
          {"workload", {{"batch", workload.batch},
                        {"context", workload.context},
                        {"prompt_tokens", workload.promptTokens}}},
          {"devices", devices},
          {"placement", {{"ops", ops}, {"weights", weights}, {"kv_cache", kv}}},
          {"kv_cache", kvCacheJson(kvCache)},
          {"each_device_alone", alone},
          {"predicted", {{"prefill_tokens_per_s", plan.prefillTokensPerS},
                         {"decode_tokens_per_s", plan.decodeTokensPerS},
                         {"decode_seconds_per_step", plan.decodeStepSeconds},
                         {"transfer_seconds_per_step", plan.transferSeconds},
                         {"sampling_seconds_per_step", plan.samplingSeconds},
                         {"sampled_on", plan.hostDevice >= 0
                                            ? nlohmann::json(plan.devices[plan.hostDevice].id)
                                            : nlohmann::json(nullptr)},
                         {"joules_per_token", plan.joulesPerToken},
                         {"usd_per_million_tokens", plan.usdPerMillionTokens},
                         {"limit", plan.limit}}},
          {"optimality", {{"proven", plan.provenOptimal},
                          {"gap", plan.optimalityGap}}}};
      std::cout << out.dump(2) << "\n";
      return 0;
    }

    std::printf("model   %s: %s, %lld layers, %s of weights\n", flags->model.c_str(),
                shape->architecture.c_str(), static_cast<long long>(shape->numLayers),
                gib(shape->totalWeightBytes()).c_str());
    std::printf("system  %s; batch %lld, context %lld, prompt %lld; objective %s\n",
                system->name.c_str(), static_cast<long long>(workload.batch),
                static_cast<long long>(workload.context),
                static_cast<long long>(workload.promptTokens), flags->objective.c_str());
    if (computing.size() < system->devices.size()) {
      std::string list;
      for (const std::string &id : computing)
        list += (list.empty() ? "" : ", ") + id;
      std::printf("units   on %s only (--compute-devices)\n", list.c_str());
    }
    std::printf("\n");
    std::printf("each device alone:\n");
    std::printf("%-6s %-22s %12s %12s %10s %11s %9s %9s  %s\n", "id", "device",
                "weights+KV", "capacity", "prefill/s", "decode/s", "J/token",
                "$/Mtok", "limited by");
    for (const DevicePlan &single : plans) {
      if (single.fits)
        std::printf("%-6s %-22s %12s %12s %10.1f %11.2f %9.3f %9.3f  %s\n",
                    single.id.c_str(), single.device->name.c_str(),
                    gib(single.weightBytes + single.kvBytes).c_str(),
                    gib(single.capacityBytes).c_str(), single.prefillTokensPerS,
                    single.decodeTokensPerS, single.joulesPerToken,
                    single.usdPerMillionTokens, single.limit.c_str());
      else
        std::printf("%-6s %-22s %12s %12s %10s %11s %9s %9s  %s\n", single.id.c_str(),
                    single.device->name.c_str(),
                    gib(single.weightBytes + single.kvBytes).c_str(),
                    gib(single.capacityBytes).c_str(), "-", "-", "-", "-",
                    single.limit.c_str());
    }
    std::printf("\npartitioned plan (units placed jointly across the system):\n");
    std::printf("%-6s %-22s %6s %12s %12s %14s %8s\n", "id", "device", "units",
                "weights", "KV cache", "decode ms/step", "busy");
    for (size_t d = 0; d < plan.devices.size(); ++d) {
      const partition::DeviceUse &device = plan.devices[d];
      uint64_t weightBytes = 0, kvBytes = 0;
      for (const partition::MemoryUse &memory : plan.memories)
        if (memory.device == static_cast<int>(d)) {
          weightBytes += memory.weightBytes;
          kvBytes += memory.kvBytes;
        }
      std::printf("%-6s %-22s %6d %12s %12s %14.3f %7.0f%%\n", device.id.c_str(),
                  device.device->name.c_str(), device.units,
                  gib(weightBytes).c_str(), gib(kvBytes).c_str(),
                  device.decodeSeconds * 1e3, device.utilization * 100);
    }
    for (const partition::MemoryUse &memory : plan.memories) {
      uint64_t held =
          memory.weightBytes + memory.kvBytes + memory.streamBufferBytes;
      if (held == 0)
        continue;
      std::printf("  %-20s %12s of %12s", memory.name.c_str(),
                  gib(held).c_str(), gib(memory.capacityBytes).c_str());
      if (memory.streamBufferBytes > 0)
        std::printf(" (%s of it for streamed weights to land in)",
                    gib(memory.streamBufferBytes).c_str());
      std::printf("\n");
    }
    std::printf("%s\n",
                kvCacheLine(kvCache, plan.decodeStepSeconds).c_str());
    int streamed = 0;
    for (const partition::PlacedUnit &unit : plan.units)
      streamed += unit.streamed ? 1 : 0;
    std::printf("%d of %zu units stream their weights over a link; transfers "
                "%.3f ms per step\n",
                streamed, plan.units.size(), plan.transferSeconds * 1e3);
    if (plan.hostDevice >= 0)
      std::printf("%s samples the tokens: %.3f ms per step\n",
                  plan.devices[plan.hostDevice].id.c_str(),
                  plan.samplingSeconds * 1e3);
    else
      std::printf("no CPU in the system: sampling is not costed\n");
    std::printf("predicted: %.1f prefill and %.2f decode tokens/s, %.3f J/token, "
                "$%.3f per million tokens; limited by %s\n",
                plan.prefillTokensPerS, plan.decodeTokensPerS, plan.joulesPerToken,
                plan.usdPerMillionTokens, plan.limit.c_str());
    if (plan.provenOptimal)
      std::printf("the plan is optimal for the objective (proven)\n");
    else
      std::printf("the plan is within %.2g%% of the optimal objective (not "
                  "proven optimal)\n",
                  std::max(plan.optimalityGap * 100, 0.01));
    return 0;
  };
}

} // namespace hetc::cli
