// From a model's shapes and a system to a partition problem and back: the
// options of each decoder unit costed by the roofline model, solved by the
// exact chain DP.
#include "hetc/Partition/ModelPlan.h"

#include "runtime/core/Limits.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

namespace hetc::partition {

namespace {

/// What one option of one unit means, beside its Option in the Problem.
struct OptionMeaning {
  int device = 0;
  int weightMemory = 0;
  int kvMemory = -1;
  bool streamed = false;
  /// The cache's bytes at this device's KV element size.
  uint64_t kvBytes = 0;
  cost::Estimate decode;
  double emptyCacheDecodeSeconds = 0;
  double prefillSeconds = 0;
  /// The token ids' trip from the host to the embedding's device, or the
  /// logits' from the output's device to the host, per step and per prefill.
  double hostSeconds = 0;
  double prefillHostSeconds = 0;
};

struct Built {
  Problem problem;
  std::vector<cost::Unit> units;
  std::vector<std::vector<OptionMeaning>> meanings;
  std::vector<MemoryUse> memories;
  /// Global memory index of (device, tier).
  std::vector<std::vector<int>> memoryIndex;
  /// Per ordered device pair: link seconds per byte and latency, or none.
  std::vector<std::optional<std::pair<double, double>>> deviceLinks;
  /// Weights of seconds in the objective, per device.
  std::vector<double> weightOfSeconds;
  /// The CPU the runtime samples tokens on, or -1 when the system has none.
  int host = -1;
  uint64_t kvBytesPerUnit(const cost::Unit &unit,
                          const cost::Workload &workload) const {
    // In double and clamped: a request past any memory must compare as too
    // large, never wrap.
    double bytes = unit.kvBytesPerContext * static_cast<double>(workload.batch) *
                   static_cast<double>(workload.kvPositions());
    return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
  }
};

/// The value of an option no plan should take while another fits.
constexpr double kNeverChosen = 1e30;

/// The fastest link between any memory of `device` and memory `target`.
const hardware::Link *linkTo(const hardware::System &system, int device,
                             hardware::MemoryRef target) {
  const hardware::Link *best = nullptr;
  for (const hardware::SystemLink &link : system.links) {
    bool forward = link.from.device == device &&
                   link.to.device == target.device &&
                   link.to.tier == target.tier;
    bool backward = link.to.device == device &&
                    link.from.device == target.device &&
                    link.from.tier == target.tier;
    if ((forward || backward) && (!best || link.link.gbPerS > best->gbPerS))
      best = &link.link;
  }
  return best;
}

/// The fastest link between any memories of two devices.
const hardware::Link *linkBetween(const hardware::System &system, int a,
                                  int b) {
  const hardware::Link *best = nullptr;
  for (const hardware::SystemLink &link : system.links) {
    bool joins = (link.from.device == a && link.to.device == b) ||
                 (link.from.device == b && link.to.device == a);
    if (joins && (!best || link.link.gbPerS > best->gbPerS))
      best = &link.link;
  }
  return best;
}

Built build(const cost::ModelShape &shape, const hardware::System &system,
            const PlanRequest &request) {
  Built built;
  const cost::Workload &workload = request.workload;
  int numDevices = static_cast<int>(system.devices.size());
  for (int d = 0; d < numDevices; ++d) {
    const hardware::SystemDevice &entry = system.devices[d];
    built.problem.devices.push_back(entry.id);
    built.memoryIndex.emplace_back();
    for (size_t t = 0; t < entry.device.memory.size(); ++t) {
      const hardware::MemoryTier &tier = entry.device.memory[t];
      built.memoryIndex.back().push_back(
          static_cast<int>(built.problem.memories.size()));
      std::string name = entry.id + "." + tier.name;
      built.problem.memories.push_back({name, tier.capacityBytes});
      built.memories.push_back(
          {name, d, tier.capacityBytes, 0, 0, 0, static_cast<int>(t)});
    }
  }
  double idleWatts = 0, usdPerSecond = 0;
  for (const hardware::SystemDevice &entry : system.devices) {
    idleWatts += entry.device.idleWatts;
    usdPerSecond += entry.device.priceUsdPerHour / 3600;
  }
  for (const hardware::SystemDevice &entry : system.devices) {
    double weight = 1;
    if (request.objective == Objective::Energy)
      weight = entry.device.activeWatts - entry.device.idleWatts + idleWatts;
    else if (request.objective == Objective::Cost)
      weight = usdPerSecond;
    built.weightOfSeconds.push_back(weight);
  }
  built.deviceLinks.resize(static_cast<size_t>(numDevices * numDevices));
  for (int a = 0; a < numDevices; ++a)
    for (int b = 0; b < numDevices; ++b)
      if (a != b)
        if (const hardware::Link *link = linkBetween(system, a, b))
          built.deviceLinks[a * numDevices + b] =
              std::make_pair(1.0 / (link->gbPerS * 1e9), link->latencyUs * 1e-6);

  for (int d = 0; d < numDevices && built.host < 0; ++d)
    if (system.devices[d].device.kind == hardware::DeviceKind::Cpu)
      built.host = d;
  // The embedding's token ids come from the host and the output's logits go
  // back to it, across a link when the unit runs elsewhere. Devices the host
  // cannot reach are costed as the unlinked hand-overs between units are.
  auto hostTrip = [&](int device, double bytes) {
    if (built.host < 0 || device == built.host)
      return 0.0;
    const auto &link = built.deviceLinks[device * numDevices + built.host];
    return link ? bytes * link->first + link->second : 1e30;
  };
  double batchSize = static_cast<double>(workload.batch);
  double idBytes = batchSize * sizeof(int32_t);
  double logitBytes =
      batchSize * static_cast<double>(shape.vocabSize) * sizeof(float);

  cost::Efficiency efficiency;
  // Units are the same on every device.
  // A plan runs as programs, which keep the module's cache type on every
  // device (the GPU kernels and the CPU segments alike).
  built.units = cost::unitsOf(shape, request.kvElementBytes);
  size_t numMemories = built.problem.memories.size();
  for (size_t u = 0; u < built.units.size(); ++u) {
    Unit unit;
    unit.name = built.units[u].name;
    std::vector<OptionMeaning> meanings;
    for (int d = 0; d < numDevices; ++d) {
      if (!system.devices[d].computes)
        continue;
      const hardware::Device &device = system.devices[d].device;
      const cost::Unit &costed = built.units[u];
      uint64_t kvBytes = built.kvBytesPerUnit(costed, workload);
      // Weight homes: the device's own memories, then others' over a link.
      // A resident home refers to the device's own tier (the cost model
      // applies the device's calibration to it); a streamed one to a copy
      // of the remote tier read at link speed.
      struct Home {
        int memory;
        const hardware::MemoryTier *tier;
        bool streamed;
        hardware::MemoryTier remote;
        const hardware::MemoryTier &read() const {
          return streamed ? remote : *tier;
        }
      };
      std::vector<Home> homes;
      for (size_t t = 0; t < device.memory.size(); ++t)
        homes.push_back(
            {built.memoryIndex[d][t], &device.memory[t], false, {}});
      for (int e = 0; e < numDevices; ++e) {
        if (e == d)
          continue;
        const hardware::Device &other = system.devices[e].device;
        for (size_t t = 0; t < other.memory.size(); ++t) {
          // Streaming reads host memory (DRAM, CXL, disk) from an
          // accelerator; another device's HBM is its own to compute in.
          if (other.memory[t].space == "hbm")
            continue;
          const hardware::Link *link =
              linkTo(system, d, {e, static_cast<int>(t)});
          if (!link)
            continue;
          // Read at the slower of the link and the memory behind it.
          hardware::MemoryTier remote = other.memory[t];
          remote.readGBPerS = std::min(remote.readGBPerS, link->gbPerS);
          remote.latencyNs += link->latencyUs * 1e3;
          homes.push_back({built.memoryIndex[e][t], nullptr, true, remote});
        }
      }
      // The KV cache is read and written every step: it stays in the
      // device's memories that are not disk.
      std::vector<int> kvHomes = {-1};
      if (kvBytes > 0) {
        kvHomes.clear();
        for (size_t t = 0; t < device.memory.size(); ++t)
          if (device.memory[t].space != "disk")
            kvHomes.push_back(static_cast<int>(t));
      }
      for (const Home &home : homes) {
        // A streamed unit's weights cross whole on every step: the
        // embedding's table too, not only the rows a step reads.
        cost::Unit read = costed;
        if (home.streamed)
          read.weightBytesPerStep = static_cast<double>(read.weightBytes);
        if (costed.weightBytes > built.problem.memories[home.memory].capacityBytes)
          continue;
        for (int kvTier : kvHomes) {
          int kvMemory = kvTier < 0 ? -1 : built.memoryIndex[d][kvTier];
          if (kvMemory >= 0 &&
              kvBytes > built.problem.memories[kvMemory].capacityBytes)
            continue;
          const hardware::MemoryTier &kv =
              kvTier < 0 ? home.read() : device.memory[kvTier];
          OptionMeaning meaning;
          meaning.device = d;
          meaning.weightMemory = home.memory;
          meaning.kvMemory = kvMemory;
          meaning.streamed = home.streamed;
          meaning.kvBytes = kvMemory >= 0 ? kvBytes : 0;
          meaning.decode = cost::decodeStep(read, workload, device,
                                            home.read(), kv, efficiency);
          cost::Workload empty = workload;
          empty.context = 0;
          meaning.emptyCacheDecodeSeconds =
              cost::decodeStep(read, empty, device, home.read(), kv,
                               efficiency)
                  .seconds();
          meaning.prefillSeconds =
              cost::prefill(read, workload, device, home.read(), kv,
                            efficiency)
                  .seconds();
          if (costed.kind == cost::UnitKind::Embedding) {
            meaning.hostSeconds = hostTrip(d, idBytes);
            meaning.prefillHostSeconds =
                hostTrip(d, idBytes * static_cast<double>(workload.promptTokens));
          } else if (costed.kind == cost::UnitKind::Output) {
            // A prefill returns the logits of its last token only.
            meaning.hostSeconds = hostTrip(d, logitBytes);
            meaning.prefillHostSeconds = meaning.hostSeconds;
          }
          Option option;
          option.device = d;
          option.value = (meaning.decode.seconds() + meaning.hostSeconds) *
                         built.weightOfSeconds[d];
          option.bytes.assign(numMemories, 0);
          option.bytes[home.memory] += costed.weightBytes;
          if (kvMemory >= 0)
            option.bytes[kvMemory] += kvBytes;
          unit.options.push_back(std::move(option));
          meanings.push_back(meaning);
        }
      }
    }
    built.problem.units.push_back(std::move(unit));
    built.meanings.push_back(std::move(meanings));
  }

  // Consecutive units pass one activation row per sequence (f32).
  double activationBytes =
      static_cast<double>(workload.batch * shape.dim) * sizeof(float);
  for (size_t u = 0; u + 1 < built.units.size(); ++u) {
    Edge edge;
    edge.from = static_cast<int>(u);
    edge.to = static_cast<int>(u + 1);
    edge.transfer.assign(static_cast<size_t>(numDevices * numDevices), 0);
    for (int a = 0; a < numDevices; ++a)
      for (int b = 0; b < numDevices; ++b) {
        if (a == b)
          continue;
        const auto &link = built.deviceLinks[a * numDevices + b];
        // Devices without a link cannot hand work to each other.
        double seconds = link ? activationBytes * link->first + link->second
                              : 1e30;
        edge.transfer[a * numDevices + b] =
            seconds * std::max(built.weightOfSeconds[a], built.weightOfSeconds[b]);
      }
    built.problem.edges.push_back(std::move(edge));
  }
  return built;
}

/// Bytes are rounded up to 1/1024 of the smallest memory that can run out
/// (at least a byte): with two or more such memories the exact frontier of
/// byte sums grows too fast for 80-layer models. Plans still fit; at most a
/// granule per unit of each memory is given up.
/// Finer solves of a plan the first one could not prove optimal.
constexpr int kRefinements = 3;
/// States per stage a solve may keep: about a second of search and 100 MB.
constexpr size_t kStateLimit = 50000;

ChainDpOptions dpOptions(const Problem &problem) {
  uint64_t smallest = 0;
  for (size_t m = 0; m < problem.memories.size(); ++m) {
    uint64_t capacity = problem.memories[m].capacityBytes;
    if (canRunOut(problem, m) && (smallest == 0 || capacity < smallest))
      smallest = capacity;
  }
  ChainDpOptions options;
  options.byteGranularity = std::max<uint64_t>(1, smallest / 1024);
  options.stateLimit = kStateLimit;
  return options;
}

} // namespace

std::optional<Objective> parseObjective(const std::string &name) {
  if (name == "latency")
    return Objective::Latency;
  if (name == "throughput")
    return Objective::Throughput;
  if (name == "cost")
    return Objective::Cost;
  if (name == "energy")
    return Objective::Energy;
  return std::nullopt;
}

Problem buildProblem(const cost::ModelShape &shape,
                     const hardware::System &system,
                     const PlanRequest &request) {
  return build(shape, system, request).problem;
}

/// Why unit `u` has no placement: its weights fit no memory, or (the
/// usual case for large batches and contexts) its KV cache fits no memory a
/// device keeps a cache in, beside those weights.
std::string noPlacementError(const cost::ModelShape &shape,
                             const hardware::System &system,
                             const PlanRequest &request, const Built &built,
                             size_t u) {
  const cost::Unit &unit = built.units[u];
  uint64_t largest = 0, largestKvHome = 0;
  std::string kvHomeName;
  uint64_t smallestKv = built.kvBytesPerUnit(unit, request.workload);
  for (const auto &entry : system.devices) {
    for (const hardware::MemoryTier &tier : entry.device.memory) {
      largest = std::max(largest, tier.capacityBytes);
      if (tier.space != "disk" && tier.capacityBytes > largestKvHome) {
        largestKvHome = tier.capacityBytes;
        kvHomeName = entry.id + " " + tier.name;
      }
    }
  }
  if (unit.weightBytes > largest || smallestKv == 0)
    return shape.origin + ": unit " + unit.name + " (" + hetrt::core::formatBytes(unit.weightBytes) +
           " of weights) fits in no single memory of " + system.name +
           "; use a smaller weight type";
  const cost::Workload &workload = request.workload;
  return shape.origin + ": the KV cache is what does not fit: unit " +
         unit.name + " needs " + hetrt::core::formatBytes(smallestKv) + " of KV cache (batch " +
         std::to_string(workload.batch) + " x " +
         std::to_string(workload.kvTokens()) +
         " tokens) beside its " + hetrt::core::formatBytes(unit.weightBytes) +
         " of weights, but the largest memory " + system.name +
         " keeps a KV cache in is " + hetrt::core::formatBytes(largestKvHome) + " (" + kvHomeName +
         "); fixes: a smaller --batch or --context, a KV cache in another "
         "tier (a system whose devices have larger DRAM or CXL memory), or "
         "more devices";
}

/// ", and the KV cache is what does not fit: ..." when the weights alone fit
/// the system's memories but not beside the request's KV cache; empty
/// otherwise.
std::string kvShortfall(const hardware::System &system,
                        const PlanRequest &request, const Built &built) {
  uint64_t weights = 0, kv = 0;
  for (const cost::Unit &unit : built.units) {
    weights += unit.weightBytes;
    kv += built.kvBytesPerUnit(unit, request.workload);
  }
  uint64_t capacity = 0, kvCapacity = 0;
  for (const auto &entry : system.devices) {
    for (const hardware::MemoryTier &tier : entry.device.memory) {
      capacity += tier.capacityBytes;
      if (tier.space != "disk")
        kvCapacity += tier.capacityBytes;
    }
  }
  if (kv == 0 || weights > capacity || kv <= kvCapacity / 2)
    return {};
  const cost::Workload &workload = request.workload;
  return "; the KV cache is what does not fit: it needs " + hetrt::core::formatBytes(kv) +
         " (batch " + std::to_string(workload.batch) + " x " +
         std::to_string(workload.kvTokens()) +
         " tokens) beside " + hetrt::core::formatBytes(weights) + " of weights, and " +
         system.name + " offers " + hetrt::core::formatBytes(kvCapacity) +
         " of memory a KV cache can live in";
}

uint64_t streamBufferBytes(const cost::ModelShape &shape, size_t numUnits,
                           const std::vector<std::pair<size_t, int>> &streamed,
                           int device) {
  // Per streamed unit on the device: how many of its weights have each size.
  std::vector<std::map<uint64_t, uint64_t>> sizes(streamed.size());
  for (const cost::WeightInfo &weight : shape.weights) {
    size_t unit = cost::unitIndexOf(weight, numUnits);
    for (size_t s = 0; s < streamed.size(); ++s)
      if (streamed[s].first == unit && streamed[s].second == device)
        ++sizes[s][std::max<uint64_t>(4, (weight.bytes + 3) / 4 * 4)];
  }
  std::map<uint64_t, uint64_t> buffers;
  for (size_t s = 0; s < streamed.size(); ++s) {
    std::map<uint64_t, uint64_t> live = sizes[s];
    if (s + 1 < streamed.size())
      for (const auto &[size, count] : sizes[s + 1])
        live[size] += count;
    for (const auto &[size, count] : live)
      buffers[size] = std::max(buffers[size], count);
  }
  uint64_t bytes = 0;
  for (const auto &[size, count] : buffers)
    bytes += size * count;
  return bytes;
}

namespace {

/// The streamed units of a solution, in order, with their devices.
std::vector<std::pair<size_t, int>> streamedUnits(const Built &built,
                                                  const Plan &solution) {
  std::vector<std::pair<size_t, int>> streamed;
  for (size_t u = 0; u < built.units.size(); ++u) {
    const OptionMeaning &meaning =
        built.meanings[u][static_cast<size_t>(solution.option[u])];
    if (meaning.streamed)
      streamed.emplace_back(u, meaning.device);
  }
  return streamed;
}

} // namespace

namespace {

/// Plans again so that each device's first memory holds the buffers the
/// weights streamed to it land in (streamBufferBytes), beside what the plan
/// keeps there. What is set aside grows to what the last plan needs, until
/// a plan fits beside it; the best plan that streams nothing competes
/// (setting buffers aside can cost more than streaming saves). `first` is
/// the plan without buffers.
template <typename Solve>
Result setAsideStreamBuffers(const cost::ModelShape &shape, const Built &built,
                             const Solve &solve, Result first) {
  size_t numDevices = built.memoryIndex.size();
  auto needs = [&](const Plan &plan) {
    std::vector<uint64_t> bytes(numDevices);
    std::vector<std::pair<size_t, int>> streamed = streamedUnits(built, plan);
    for (size_t d = 0; d < numDevices; ++d)
      bytes[d] = streamBufferBytes(shape, built.units.size(), streamed,
                                   static_cast<int>(d));
    return bytes;
  };
  // Whether `plan` fits with its buffers in the unreduced memories.
  auto fits = [&](const Plan &plan) {
    std::vector<uint64_t> held(built.problem.memories.size(), 0);
    for (size_t u = 0; u < built.units.size(); ++u) {
      const Option &option =
          built.problem.units[u].options[static_cast<size_t>(plan.option[u])];
      for (size_t m = 0; m < held.size(); ++m)
        held[m] += option.bytes[m];
    }
    std::vector<uint64_t> buffers = needs(plan);
    for (size_t d = 0; d < numDevices; ++d)
      held[built.memoryIndex[d].front()] += buffers[d];
    for (size_t m = 0; m < held.size(); ++m)
      if (held[m] > built.problem.memories[m].capacityBytes)
        return false;
    return true;
  };
  Result result = std::move(first);
  std::vector<uint64_t> reserved(numDevices, 0);
  for (int round = 0; result && round < 8 && !fits(*result.plan); ++round) {
    std::vector<uint64_t> buffers = needs(*result.plan);
    Problem reduced = built.problem;
    for (size_t d = 0; d < numDevices; ++d) {
      reserved[d] = std::max(reserved[d], buffers[d]);
      uint64_t &capacity =
          reduced.memories[built.memoryIndex[d].front()].capacityBytes;
      capacity -= std::min(capacity, reserved[d]);
    }
    result = solve(reduced);
  }
  bool streams = result && !streamedUnits(built, *result.plan).empty();
  if (result && streams && !fits(*result.plan))
    result = Result();
  if (!streams)
    return result;
  Problem resident = built.problem;
  for (size_t u = 0; u < resident.units.size(); ++u)
    for (size_t o = 0; o < resident.units[u].options.size(); ++o)
      if (built.meanings[u][o].streamed)
        resident.units[u].options[o].value = kNeverChosen;
  Result alternative = solve(resident);
  if (alternative && alternative.plan->objective < kNeverChosen &&
      (!result || alternative.plan->objective <= result.plan->objective))
    return alternative;
  return result;
}

} // namespace

std::optional<ModelPlan> planModel(const cost::ModelShape &shape,
                                   const hardware::System &system,
                                   const PlanRequest &request,
                                   std::string &error) {
  if (system.devices.empty()) {
    error = system.name + ": the system has no devices";
    return std::nullopt;
  }
  Built built = build(shape, system, request);
  for (size_t u = 0; u < built.problem.units.size(); ++u)
    if (built.problem.units[u].options.empty()) {
      error = noPlacementError(shape, system, request, built, u);
      return std::nullopt;
    }
  auto solve = [](const Problem &problem) {
    ChainDpOptions options = dpOptions(problem);
    Result result = solveChainDp(problem, options);
    // An unproven plan is solved again at finer granules, a bounded number
    // of times, so planning stays fast and deterministic.
    for (int step = 0; step < kRefinements && result && !result.optimal &&
                       options.byteGranularity > 1;
         ++step) {
      options.byteGranularity =
          std::max<uint64_t>(1, options.byteGranularity / 8);
      options.startFrom = result.plan->option;
      Result finer = solveChainDp(problem, options);
      if (!finer)
        break;
      result = std::move(finer);
    }
    return result;
  };
  int numDevices = static_cast<int>(system.devices.size());
  Result result = solve(built.problem);
  if (result && !streamedUnits(built, *result.plan).empty())
    result = setAsideStreamBuffers(shape, built, solve, std::move(result));
  if (!result) {
    error = result.shortfall
                ? shape.origin + " does not fit " + system.name + ": " +
                      describe(built.problem, *result.shortfall) +
                      kvShortfall(system, request, built) +
                      "; use a smaller weight type, batch or context, or a "
                      "system with more memory"
                : result.error;
    return std::nullopt;
  }

  const cost::Workload &workload = request.workload;
  ModelPlan plan;
  plan.provenOptimal = result.optimal;
  if (!result.optimal && result.lowerBound && result.plan->objective > 0)
    plan.optimalityGap =
        std::max(0.0, (result.plan->objective - *result.lowerBound) /
                          result.plan->objective);
  plan.memories = built.memories;
  for (const hardware::SystemDevice &entry : system.devices)
    plan.devices.push_back({entry.id, &entry.device, 0, 0, 0, 0});
  for (int d = 0; d < numDevices; ++d)
    plan.memories[built.memoryIndex[d].front()].streamBufferBytes =
        streamBufferBytes(shape, built.units.size(),
                          streamedUnits(built, *result.plan), d);
  double activationBytes =
      static_cast<double>(workload.batch * shape.dim) * sizeof(float);
  for (size_t u = 0; u < built.units.size(); ++u) {
    const OptionMeaning &meaning =
        built.meanings[u][static_cast<size_t>(result.plan->option[u])];
    PlacedUnit placed;
    placed.unit = built.units[u];
    placed.device = meaning.device;
    placed.weightMemory = meaning.weightMemory;
    placed.kvMemory = meaning.kvMemory;
    placed.streamed = meaning.streamed;
    placed.decodeSeconds = meaning.decode.seconds();
    placed.emptyCacheDecodeSeconds = meaning.emptyCacheDecodeSeconds;
    placed.prefillSeconds = meaning.prefillSeconds;
    placed.hostTransferSeconds = meaning.hostSeconds;
    placed.prefillHostTransferSeconds = meaning.prefillHostSeconds;
    placed.memoryBound = meaning.decode.memoryBound();
    if (placed.hostTransferSeconds >= 1e30) {
      error = shape.origin + " fits " + system.name + " only with " +
              placed.unit.name + " on " + plan.devices[placed.device].id +
              ", and the system has no link from it to " +
              plan.devices[built.host].id +
              ", which samples the tokens; add the link to the system JSON";
      return std::nullopt;
    }
    plan.transferSeconds += placed.hostTransferSeconds;
    plan.prefillTransferSeconds += placed.prefillHostTransferSeconds;
    plan.memories[meaning.weightMemory].weightBytes += placed.unit.weightBytes;
    if (meaning.kvMemory >= 0)
      plan.memories[meaning.kvMemory].kvBytes += meaning.kvBytes;
    DeviceUse &device = plan.devices[meaning.device];
    ++device.units;
    device.decodeSeconds += placed.decodeSeconds;
    device.prefillSeconds += placed.prefillSeconds;
    if (u > 0 && plan.units.back().device != placed.device) {
      const auto &link =
          built.deviceLinks[plan.units.back().device * numDevices + placed.device];
      if (!link) {
        // Only chosen when nothing else fits: the hand-over is impossible.
        error = shape.origin + " fits " + system.name + " only by handing " +
                placed.unit.name + " from " +
                plan.devices[plan.units.back().device].id + " to " +
                plan.devices[placed.device].id +
                ", and the system has no link between them; add the link to "
                "the system JSON";
        return std::nullopt;
      }
      placed.handOverSeconds = activationBytes * link->first + link->second;
      placed.prefillHandOverSeconds =
          activationBytes * static_cast<double>(workload.promptTokens) *
              link->first +
          link->second;
      plan.transferSeconds += placed.handOverSeconds;
      plan.prefillTransferSeconds += placed.prefillHandOverSeconds;
    }
    plan.units.push_back(std::move(placed));
  }
  // The host samples every sequence's next token before the next step can
  // start; a prefill's first token is sampled outside the prefill.
  plan.hostDevice = built.host;
  if (built.host >= 0) {
    plan.samplingSeconds = cost::samplingSeconds(
        system.devices[built.host].device, shape.vocabSize, workload.batch);
    plan.devices[built.host].decodeSeconds += plan.samplingSeconds;
  }
  plan.decodeStepSeconds = plan.transferSeconds;
  plan.prefillSeconds = plan.prefillTransferSeconds;
  for (const DeviceUse &device : plan.devices) {
    plan.decodeStepSeconds += device.decodeSeconds;
    plan.prefillSeconds += device.prefillSeconds;
  }
  double batch = static_cast<double>(workload.batch);
  plan.decodeTokensPerS = batch / plan.decodeStepSeconds;
  plan.prefillTokensPerS =
      batch * static_cast<double>(workload.promptTokens) / plan.prefillSeconds;
  double joulesPerStep = 0, usdPerSecond = 0;
  for (DeviceUse &device : plan.devices) {
    device.utilization = device.decodeSeconds / plan.decodeStepSeconds;
    joulesPerStep += device.device->activeWatts * device.decodeSeconds +
                     device.device->idleWatts *
                         (plan.decodeStepSeconds - device.decodeSeconds);
    usdPerSecond += device.device->priceUsdPerHour / 3600;
  }
  plan.joulesPerToken = joulesPerStep / batch;
  plan.usdPerMillionTokens = usdPerSecond * plan.decodeStepSeconds / batch * 1e6;

  // The limit: the device that takes most of a step, and what bounds it there.
  const DeviceUse *busiest = &plan.devices.front();
  for (const DeviceUse &device : plan.devices)
    if (device.decodeSeconds > busiest->decodeSeconds)
      busiest = &device;
  int busiestIndex = static_cast<int>(busiest - plan.devices.data());
  double memoryBound = 0, computeBound = 0, streamed = 0;
  for (const PlacedUnit &unit : plan.units) {
    if (unit.device != busiestIndex)
      continue;
    (unit.memoryBound ? memoryBound : computeBound) += unit.decodeSeconds;
    if (unit.streamed)
      streamed += unit.decodeSeconds;
  }
  if (plan.transferSeconds > busiest->decodeSeconds)
    plan.limit = "activation transfers between devices";
  else if (busiestIndex == plan.hostDevice &&
           plan.samplingSeconds > 0.5 * busiest->decodeSeconds)
    plan.limit = "sampling the tokens on " + busiest->id;
  else if (streamed > 0.5 * busiest->decodeSeconds)
    plan.limit = "weights streamed over links to " + busiest->id;
  else if (memoryBound >= computeBound)
    plan.limit = "memory bandwidth of " + busiest->id;
  else
    plan.limit = "compute of " + busiest->id;
  return plan;
}

KvTierPlan planKvTiers(const ModelPlan &plan, const hardware::System &system,
                       const cost::ModelShape &shape, double kvElementBytes,
                       int64_t blockTokens, int64_t positions,
                       uint64_t reserved) {
  KvTierPlan tiers;
  double rows = static_cast<double>(shape.numLayers * blockTokens * 2 *
                                    shape.numKvHeads);
  tiers.blockBytes = static_cast<uint64_t>(
      rows * static_cast<double>(shape.headDim) * kvElementBytes);
  if (tiers.blockBytes == 0)
    return tiers;
  // The host DRAM the tier lives in: the first CPU's home memory.
  int host = -1;
  for (size_t m = 0; m < plan.memories.size(); ++m)
    if (plan.memories[m].tier == 0 &&
        system.devices[plan.memories[m].device].device.kind ==
            hardware::DeviceKind::Cpu) {
      host = static_cast<int>(m);
      break;
    }
  if (host < 0)
    return tiers;
  const MemoryUse &dram = plan.memories[host];
  // Each pool's part of a sequence crosses the link from host DRAM to it;
  // pools on different devices fill over their own links at once.
  std::map<int, double> seconds;
  std::map<int, std::string> links;
  double perLayer = static_cast<double>(positions) *
                    shape.kvBytesPerTokenLayer(kvElementBytes);
  for (const PlacedUnit &unit : plan.units) {
    if (unit.kvMemory < 0 || unit.kvMemory == host)
      continue;
    const MemoryUse &pool = plan.memories[unit.kvMemory];
    const hardware::Link *link =
        linkTo(system, dram.device, {pool.device, pool.tier});
    if (!link || link->gbPerS <= 0)
      continue;
    seconds[pool.device] += perLayer / (link->gbPerS * 1e9);
    links[pool.device] = link->name + " to " + system.devices[pool.device].id;
  }
  for (const auto &[device, restore] : seconds)
    if (restore > tiers.restoreSeconds) {
      tiers.restoreSeconds = restore;
      tiers.slowestLink = links[device];
    }
  tiers.int8 = tiers.restoreSeconds > plan.decodeStepSeconds;
  // An int8 row: a byte per element and its f32 scale.
  tiers.tierBlockBytes =
      tiers.int8 ? static_cast<uint64_t>(
                       rows * static_cast<double>(shape.headDim + 4))
                 : tiers.blockBytes;
  uint64_t used =
      dram.weightBytes + dram.kvBytes + dram.streamBufferBytes + reserved;
  if (used < dram.capacityBytes)
    tiers.hostBlocks = static_cast<int64_t>((dram.capacityBytes - used) / 2 /
                                            tiers.tierBlockBytes);
  return tiers;
}

} // namespace hetc::partition
