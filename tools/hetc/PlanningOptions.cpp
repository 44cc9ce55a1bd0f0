// The options `hetc plan` and `hetc simulate` share, and their loading.
#include "PlanningOptions.h"
#include "Flags.h"

#include "runtime/core/Limits.h"

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
  command.add_option("--objective", flags.objective, "What the plan optimizes")
      ->check(CLI::IsMember({"latency", "throughput", "cost", "energy"}))
      ->capture_default_str();
  command.add_option("--batch", flags.batch, "Sequences decoded together")
      ->check(wholeRange(1, int64_t(1) << 20))
      ->capture_default_str();
  command.add_option("--prompt-tokens", flags.promptTokens,
                     "Prompt length of the prefill")
      ->check(wholeRange(1, INT32_MAX))
      ->capture_default_str();
  command
      .add_option("--device-memory", flags.deviceMemory,
                  "Cap what the plan may use of a device's memory, DEVICE=SIZE "
                  "(e.g. gpu0=8GiB); repeat or comma-separate for several")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

bool applyDeviceMemoryCaps(const std::vector<std::string> &caps,
                           hardware::System &system, std::string &error) {
  static const std::pair<const char *, uint64_t> kUnits[] = {
      {"TiB", uint64_t(1) << 40}, {"GiB", uint64_t(1) << 30},
      {"MiB", uint64_t(1) << 20}, {"KiB", uint64_t(1) << 10},
      {"TB", 1000000000000ull},   {"GB", 1000000000ull},
      {"MB", 1000000ull},         {"KB", 1000ull},
      {"B", 1},
  };
  std::vector<std::string> capped;
  for (const std::string &cap : caps) {
    auto fail = [&](const std::string &why) {
      error = "--device-memory " + cap + ": " + why;
      return false;
    };
    size_t equals = cap.find('=');
    if (equals == std::string::npos || equals == 0)
      return fail("write DEVICE=SIZE, e.g. gpu0=8GiB");
    std::string id = cap.substr(0, equals), size = cap.substr(equals + 1);
    // Within one list a second cap for a device is a mistake, not an edit.
    if (std::find(capped.begin(), capped.end(), id) != capped.end())
      return fail(id + " is capped twice in one list; give one size per "
                       "device");
    capped.push_back(id);
    int index = system.deviceIndex(id);
    if (index < 0) {
      std::string ids;
      for (const hardware::SystemDevice &device : system.devices)
        ids += (ids.empty() ? "" : ", ") + device.id;
      return fail(system.name + " has no device \"" + id + "\" (it has " +
                  ids + ")");
    }
    uint64_t unit = 0;
    std::string number = size;
    for (const auto &[suffix, bytes] : kUnits) {
      std::string_view text(size), tail(suffix);
      if (text.size() > tail.size() &&
          text.substr(text.size() - tail.size()) == tail) {
        unit = bytes;
        number = size.substr(0, size.size() - tail.size());
        break;
      }
    }
    char *end = nullptr;
    errno = 0;
    double value = std::strtod(number.c_str(), &end);
    if (unit == 0 || number.empty() || end != number.c_str() + number.size() ||
        errno == ERANGE || !std::isfinite(value) || value <= 0)
      return fail("the size must be a positive number with a unit (B, KiB, "
                  "MiB, GiB, TiB, KB, MB, GB or TB), e.g. 8GiB");
    double bytes = value * static_cast<double>(unit);
    hardware::Device &device = system.devices[index].device;
    if (device.memory.empty())
      return fail(id + " has no memory to cap");
    hardware::MemoryTier &home = device.memory.front();
    if (bytes >= static_cast<double>(home.capacityBytes)) {
      // Not an error (the plan may use all of it), but likely a typo.
      hetc::cli::printMessage(
                   "hetc: warning: --device-memory %s is no less than the "
                   "%s %s has; the cap changes nothing\n",
                   cap.c_str(),
                   hetrt::core::formatBytes(home.capacityBytes).c_str(),
                   id.c_str());
      continue;
    }
    home.capacityBytes = static_cast<uint64_t>(bytes);
  }
  return true;
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
  if (!applyDeviceMemoryCaps(flags.deviceMemory, *system, error)) {
    exitCode = 2;
    return std::nullopt;
  }
  std::optional<cost::ModelShape> shape =
      cost::loadModelShape(flags.model, flags.weightType, error);
  if (!shape)
    return std::nullopt;
  // The option's check admits only names parseObjective knows.
  return PlanningInputs{std::move(*system), std::move(*shape),
                        *partition::parseObjective(flags.objective)};
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

} // namespace hetc::cli
