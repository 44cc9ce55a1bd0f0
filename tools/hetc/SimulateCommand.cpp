// `hetc simulate MODEL --system SYS`: plays a request (a prefill and N decode
// steps) through the plan `hetc plan` makes, and reports each device's busy
// time and utilization over it, optionally as an SVG Gantt chart.
#include "Commands.h"
#include "Flags.h"
#include "PlanningOptions.h"

#include "runtime/core/Limits.h"
#include "runtime/format/OutputFile.h"

#include "hetc/Cost/ModelShape.h"
#include "hetc/Hardware/Catalog.h"
#include "hetc/Partition/ModelPlan.h"
#include "hetc/Partition/Simulate.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

namespace hetc::cli {

namespace {
struct SimulateFlags : PlanningFlags {
  int64_t decodeTokens = 32;
  std::string svg;
  bool json = false;
};
} // namespace

Action registerSimulateCommand(CLI::App &app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App *command = app.add_subcommand(
      "simulate", "Play a request (prefill and decode steps) through the plan "
                  "and report each device's timeline and utilization");
  addPlanningOptions(*command, *flags);
  // Every step is played event by event: a million steps is past the
  // longest context of a released model and still takes seconds.
  command->add_option("-n,--decode-tokens", flags->decodeTokens,
                      "Decode steps after the prefill (at most 1048576)")
      ->check(wholeRange(0, 1 << 20))
      ->capture_default_str();
  command->add_option("--svg", flags->svg, "Write the timeline as an SVG Gantt chart")
      ->check(outputFileName());
  command->add_flag("--json", flags->json,
                    "Print the per-device summary and the events (of the prefill and "
                    "at most the first 10000 decode steps) as JSON");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string error;
    // A chart of more steps than pixels is unreadable and hundreds of MB.
    constexpr int64_t kMaxChartSteps = partition::kMaxRecordedDecodeSteps;
    if (!flags->svg.empty() && flags->decodeTokens > kMaxChartSteps) {
      std::cerr << "hetc simulate: --svg charts at most " << kMaxChartSteps
                << " decode steps, and -n is " << flags->decodeTokens
                << "; give a smaller -n for the chart (the summary takes any "
                   "-n)\n";
      return 2;
    }
    if (!flags->svg.empty() &&
        (!hetrt::format::checkOutputPath(flags->svg,
                                         {flags->model, flags->system},
                                         "--svg", error) ||
         !hetrt::format::checkReplaceable(flags->svg, "<svg", "an SVG image",
                                          "--svg", error))) {
      std::cerr << "hetc simulate: " << error << "\n";
      return 1;
    }
    int exitCode = 1;
    std::optional<PlanningInputs> inputs =
        loadPlanningInputs(*flags, error, exitCode);
    if (!inputs) {
      std::cerr << "hetc simulate: " << error << "\n";
      return exitCode;
    }
    const hardware::System *system = &inputs->system;
    const cost::ModelShape *shape = &inputs->shape;
    // The plan holds the cache of the whole request.
    partition::PlanRequest request;
    request.workload = {flags->batch, flags->promptTokens + flags->decodeTokens,
                        flags->promptTokens};
    request.objective = inputs->objective;
    request.kvElementBytes = inputs->kvElementBytes;
    warnPastTrainedContext(*shape, request.workload, "hetc simulate");
    std::optional<partition::ModelPlan> plan =
        partition::planModel(*shape, *system, request, error);
    if (!plan) {
      std::cerr << "hetc simulate: " << error << "\n";
      return 3;
    }
    partition::Timeline timeline = partition::simulate(
        *plan, request.workload, request.workload.context, flags->decodeTokens);
    if (!flags->svg.empty()) {
      if (!hetrt::format::writeFileAtomically(
              flags->svg,
              partition::timelineSvg(*plan, timeline,
                                     flags->model + " on " + system->name),
              error)) {
        std::cerr << "hetc simulate: " << error << "\n";
        return 1;
      }
    }
    // The memory the request holds, as the runtime would: each memory's
    // weights, KV pool and stream buffers, and the KV cache's blocks.
    KvCacheModel kvCache =
        kvCacheModel(*plan, *inputs, *flags, request.workload);
    if (flags->json) {
      nlohmann::json memories = nlohmann::json::array();
      for (const partition::MemoryUse &memory : plan->memories)
        memories.push_back({{"name", memory.name},
                            {"weight_bytes", memory.weightBytes},
                            {"kv_bytes", memory.kvBytes},
                            {"stream_buffer_bytes", memory.streamBufferBytes},
                            {"capacity_bytes", memory.capacityBytes}});
      nlohmann::json devices = nlohmann::json::array();
      for (size_t d = 0; d < plan->devices.size(); ++d)
        devices.push_back(
            {{"id", plan->devices[d].id},
             {"busy_seconds", timeline.busySeconds[d]},
             {"utilization", timeline.totalSeconds > 0
                                 ? timeline.busySeconds[d] / timeline.totalSeconds
                                 : 0}});
      nlohmann::json events = nlohmann::json::array();
      for (const partition::TimelineEvent &event : timeline.events)
        events.push_back(
            {{"device", event.device >= 0 ? plan->devices[event.device].id
                                          : std::string("link")},
             {"unit", event.unit},
             {"phase", event.phase},
             {"start", event.start},
             {"end", event.end}});
      nlohmann::json out = {{"schema", "hetc.simulate/1"},
                            {"system", system->name},
                            {"prefill_seconds", timeline.prefillSeconds},
                            {"total_seconds", timeline.totalSeconds},
                            {"decode_steps", timeline.decodeSteps},
                            {"events_decode_steps",
                             timeline.recordedDecodeSteps},
                            {"decode_tokens_per_s", timeline.decodeTokensPerS},
                            {"link_seconds", timeline.linkSeconds},
                            {"devices", devices},
                            {"memories", memories},
                            {"kv_cache", kvCacheJson(kvCache)},
                            {"events", events}};
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::printf("request: prefill of %lld tokens, then %lld decode steps "
                "(batch %lld) on %s\n",
                static_cast<long long>(flags->promptTokens),
                static_cast<long long>(flags->decodeTokens),
                static_cast<long long>(flags->batch), system->name.c_str());
    std::printf("prefill %.3f ms, whole request %.3f ms; decode %.2f tokens/s\n",
                timeline.prefillSeconds * 1e3, timeline.totalSeconds * 1e3,
                timeline.decodeTokensPerS);
    std::printf("%-6s %-22s %12s %8s\n", "id", "device", "busy ms", "busy");
    for (size_t d = 0; d < plan->devices.size(); ++d)
      std::printf("%-6s %-22s %12.3f %7.1f%%\n", plan->devices[d].id.c_str(),
                  plan->devices[d].device->name.c_str(),
                  timeline.busySeconds[d] * 1e3,
                  timeline.totalSeconds > 0
                      ? 100 * timeline.busySeconds[d] / timeline.totalSeconds
                      : 0.0);
    std::printf("%-6s %-22s %12.3f %7.1f%%\n", "links", "transfers",
                timeline.linkSeconds * 1e3,
                timeline.totalSeconds > 0
                    ? 100 * timeline.linkSeconds / timeline.totalSeconds
                    : 0.0);
    for (const partition::MemoryUse &memory : plan->memories)
      if (memory.weightBytes + memory.kvBytes + memory.streamBufferBytes > 0)
        std::printf("%s: %s of weights, %s of KV cache, %s of stream "
                    "buffers\n",
                    memory.name.c_str(),
                    hetrt::core::formatBytes(memory.weightBytes).c_str(),
                    hetrt::core::formatBytes(memory.kvBytes).c_str(),
                    hetrt::core::formatBytes(memory.streamBufferBytes).c_str());
    std::printf("%s\n",
                kvCacheLine(kvCache, plan->decodeStepSeconds).c_str());
    if (!flags->svg.empty())
      std::printf("timeline: %s (%zu intervals)\n", flags->svg.c_str(),
                  timeline.events.size());
    return 0;
  };
}

} // namespace hetc::cli
