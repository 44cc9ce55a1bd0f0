// The options `hetc plan` and `hetc simulate` share (a model's shapes, a
// system, an objective and a request's size) and the loading of what they
// name.
#ifndef HETC_TOOLS_HETC_PLANNINGOPTIONS_H
#define HETC_TOOLS_HETC_PLANNINGOPTIONS_H

#include "hetc/Cost/ModelShape.h"
#include "hetc/Hardware/Catalog.h"
#include "hetc/Partition/ModelPlan.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hetc::cli {

struct PlanningFlags {
  std::string model;
  std::string system;
  std::string catalog;
  std::string weightType = "f16";
  /// The KV cache's element type, as hetc compile's --kv-type.
  std::string kvType = "f16";
  std::string objective = "latency";
  int64_t batch = 1;
  int64_t promptTokens = 128;
  /// --device-memory DEVICE=SIZE: caps on devices' home memories.
  std::vector<std::string> deviceMemory;
  /// --compute-devices: the devices units may run on (empty: all).
  std::vector<std::string> computeDevices;
};

/// Adds the model positional and --system, --catalog, --weight-type,
/// --kv-type, --objective, --batch, --prompt-tokens, --device-memory and
/// --compute-devices to
/// `command`, bound to `flags`.
void addPlanningOptions(CLI::App &command, PlanningFlags &flags);

struct PlanningInputs {
  hardware::System system;
  cost::ModelShape shape;
  partition::Objective objective = partition::Objective::Latency;
  /// Bytes of a KV-cache element (--kv-type).
  double kvElementBytes = 2;
};

/// Loads the system and the model's shapes `flags` name (with the
/// --device-memory caps and --compute-devices applied); on failure returns
/// nothing and sets `error` to a message naming the file, field and fix, and
/// `exitCode` to 2 when a flag is what is wrong (a --device-memory or
/// --compute-devices entry), 1 otherwise.
std::optional<PlanningInputs> loadPlanningInputs(const PlanningFlags &flags,
                                                 std::string &error,
                                                 int &exitCode);

/// Warns on stderr (prefixed by `tool`) when the request's KV cache holds
/// more tokens than the model was trained for: the plan is still made, but
/// the text past that length may degrade.
void warnPastTrainedContext(const cost::ModelShape &shape,
                            const cost::Workload &workload,
                            const std::string &tool);

/// The KV cache of `workload` under `plan` as the runtime pages it (the
/// same model hetc plan and hetc simulate print): blocks of every layer's
/// keys and values of kDefaultKvBlockSize positions, a pool of the batch's
/// whole contexts, and the host tier the plan gives idle sequences
/// (het-partition's het.kv_tiers), with how it keeps them.
struct KvCacheModel {
  std::string elementType;
  int64_t blockTokens = 0;
  int64_t poolBlocks = 0;
  partition::KvTierPlan tiers;
};
KvCacheModel kvCacheModel(const partition::ModelPlan &plan,
                          const PlanningInputs &inputs,
                          const PlanningFlags &flags,
                          const cost::Workload &workload);
/// Its fields as `--json` prints them.
nlohmann::json kvCacheJson(const KvCacheModel &kv);
/// Its line of the text output ("KV cache (f16): blocks of ...").
std::string kvCacheLine(const KvCacheModel &kv, double decodeStepSeconds);

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_PLANNINGOPTIONS_H
