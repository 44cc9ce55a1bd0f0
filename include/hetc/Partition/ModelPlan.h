// A decoder model placed across the devices of a system: the partition
// problem built from its shapes, the system's memories and links and the cost
// model, solved exactly, and read back as a plan per unit and per device.
#ifndef HETC_PARTITION_MODELPLAN_H
#define HETC_PARTITION_MODELPLAN_H

#include "hetc/Cost/CostModel.h"
#include "hetc/Hardware/Catalog.h"
#include "hetc/Partition/Partition.h"

#include <optional>
#include <string>
#include <vector>

namespace hetc::partition {

/// What a plan minimizes. Each is a sum over the units' decode-step times,
/// weighted per device: latency and throughput by 1 (at batch 1 and at the
/// requested batch), energy by the device's active power plus every other
/// device's idle power, cost by the price of the whole system.
enum class Objective { Latency, Throughput, Cost, Energy };

/// Parses "latency", "throughput", "cost" or "energy".
std::optional<Objective> parseObjective(const std::string &name);

struct PlanRequest {
  cost::Workload workload;
  Objective objective = Objective::Latency;
  /// Bytes of a KV-cache element, as the programs keep it on every device
  /// (the module's cache type: 4 for f32, 2 for f16).
  double kvElementBytes = 4;
};

/// One decoder unit's placement.
struct PlacedUnit {
  cost::Unit unit;
  int device = 0;
  /// Indices into ModelPlan::memories.
  int weightMemory = 0;
  int kvMemory = -1;
  /// True when the weights live in another device's memory and cross a link
  /// on every use.
  bool streamed = false;
  /// Decode step at the request's context, and with an empty cache: a step
  /// at another context is interpolated between them.
  double decodeSeconds = 0;
  double emptyCacheDecodeSeconds = 0;
  double prefillSeconds = 0;
  /// Handing the activations over from the previous unit's device (0 on the
  /// same device), per decode step and for a prefill.
  double handOverSeconds = 0;
  double prefillHandOverSeconds = 0;
  /// The embedding's token ids from the host, or the output's logits to the
  /// host, across a link when the unit runs on another device; per decode
  /// step and for a prefill.
  double hostTransferSeconds = 0;
  double prefillHostTransferSeconds = 0;
  /// Whether the unit's decode step is limited by reading memory.
  bool memoryBound = false;

  /// The unit's decode step with `context` tokens in the cache.
  double decodeSecondsAt(int64_t context, int64_t plannedContext) const {
    if (plannedContext <= 0)
      return decodeSeconds;
    return emptyCacheDecodeSeconds +
           (decodeSeconds - emptyCacheDecodeSeconds) *
               static_cast<double>(context) /
               static_cast<double>(plannedContext);
  }
};

/// A memory of the system and what the plan keeps in it.
struct MemoryUse {
  std::string name;
  int device = 0;
  uint64_t capacityBytes = 0;
  uint64_t weightBytes = 0;
  uint64_t kvBytes = 0;
  /// The buffers weights streamed to the device land in (its first memory
  /// only): see streamBufferBytes.
  uint64_t streamBufferBytes = 0;
  /// Index into the device's memory list.
  int tier = 0;
};

struct DeviceUse {
  std::string id;
  const hardware::Device *device = nullptr;
  int units = 0;
  /// Busy seconds per decode step, sampling included on the host.
  double decodeSeconds = 0;
  double prefillSeconds = 0;
  /// Busy fraction of a decode step.
  double utilization = 0;
};

struct ModelPlan {
  std::vector<PlacedUnit> units;
  std::vector<MemoryUse> memories;
  std::vector<DeviceUse> devices;
  /// Activations, token ids and logits crossing between devices, per decode
  /// step and per prefill.
  double transferSeconds = 0;
  double prefillTransferSeconds = 0;
  /// The device that samples the tokens (the system's first CPU; -1 when it
  /// has none) and the seconds it spends on it per decode step, which are
  /// part of its DeviceUse::decodeSeconds.
  int hostDevice = -1;
  double samplingSeconds = 0;
  double decodeStepSeconds = 0;
  double prefillSeconds = 0;
  double decodeTokensPerS = 0;
  double prefillTokensPerS = 0;
  double joulesPerToken = 0;
  double usdPerMillionTokens = 0;
  /// What bounds the plan, in words.
  std::string limit;
  /// Whether the solver proved the plan optimal for its objective; when not,
  /// the most by which the objective may exceed the optimum, as a fraction.
  bool provenOptimal = true;
  double optimalityGap = 0;
};

/// The placement problem for `shape` on `system`: one unit per decoder part
/// (embedding, each layer's attention and FFN, output) in execution order,
/// chained by the activations passed between them. A unit's options are a
/// device and where its weights live — in one of that device's memories, or
/// streamed over a link from another device's memory — and, for attention,
/// which of the device's memories holds its KV cache. Options whose weights
/// or cache could not fit even alone are left out.
Problem buildProblem(const cost::ModelShape &shape,
                     const hardware::System &system,
                     const PlanRequest &request);

/// Bytes of the buffers the weights of the units a plan streams to `device`
/// land in, as the programs allocate them: a buffer per weight (in whole
/// 4-byte words), reused by a weight of the same size two streamed units
/// later, since a unit's copies are issued while the streamed unit before
/// it computes. `streamed` lists the streamed units' indices in order and
/// the device each runs on.
uint64_t streamBufferBytes(const cost::ModelShape &shape, size_t numUnits,
                           const std::vector<std::pair<size_t, int>> &streamed,
                           int device);

/// Solves the problem exactly (the chain DP) and reads the plan back. A
/// device that streams weights first sets aside the buffers they land in
/// (streamBufferBytes) in its first memory. The
/// plan refers to `system`'s devices, so `system` must outlive it. When
/// nothing fits, returns nothing and sets `error` to the memory that fails
/// and by how many bytes.
std::optional<ModelPlan> planModel(const cost::ModelShape &shape,
                                   const hardware::System &system,
                                   const PlanRequest &request,
                                   std::string &error);

/// The KV cache's host tier a plan gives: where the blocks of idle
/// sequences go when the pool is full, and how it keeps them.
struct KvTierPlan {
  /// Whole blocks, as the tier keeps them, in half of the host DRAM the
  /// plan leaves free (the first CPU's home memory, less its weights,
  /// caches, stream buffers and the reserved bytes; the other half stays
  /// the system's). 0 without a CPU.
  int64_t hostBlocks = 0;
  /// Each row of a head's keys or values as int8 with an f32 scale (the
  /// runtime's KvTierFormat::Int8), chosen when the link is the bottleneck:
  /// bringing one sequence's cache back to its pool takes longer than a
  /// decode step, so the batch would wait for it. Exact otherwise.
  bool int8 = false;
  /// Bytes of a block in the pool, and in the tier.
  uint64_t blockBytes = 0;
  uint64_t tierBlockBytes = 0;
  /// Seconds to bring one sequence's cache (the planned context) back from
  /// host DRAM to the pools that hold it, over their links, with exact
  /// blocks; 0 when host DRAM holds the pool itself.
  double restoreSeconds = 0;
  /// The link that takes longest, in words ("pcie4-x16 to gpu0").
  std::string slowestLink;
};

/// The tier for blocks of `blockTokens` positions of `shape`'s cache in
/// elements of `kvElementBytes`, for sequences of `positions`.
KvTierPlan planKvTiers(const ModelPlan &plan, const hardware::System &system,
                       const cost::ModelShape &shape, double kvElementBytes,
                       int64_t blockTokens, int64_t positions,
                       uint64_t reserved = 0);

} // namespace hetc::partition

#endif // HETC_PARTITION_MODELPLAN_H
