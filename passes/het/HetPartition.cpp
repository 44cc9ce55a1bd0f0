// het-partition: the cost model's plan written into the IR (see Passes.td).
#include "passes/het/ModuleShape.h"
#include "passes/het/Passes.h"

#include "abi/CodeRecord.h"

#include "dialects/het/HetDialect.h"
#include "dialects/het/HetOps.h"
#include "dialects/llm/LLMDialect.h"
#include "dialects/llm/LLMOps.h"

#include "hetc/Cost/CostModel.h"
#include "hetc/Hardware/Catalog.h"
#include "hetc/Partition/ModelPlan.h"
#include "runtime/format/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <map>

#define DEBUG_TYPE "het-partition"

namespace hetc::het {
#define GEN_PASS_DEF_HETPARTITIONPASS
#include "passes/het/Passes.h.inc"
} // namespace hetc::het

using namespace mlir;
using namespace hetc;
using namespace hetc::het;

namespace {

/// Positions per KV-cache block in the tiers het-partition declares.
constexpr int64_t kKVBlockTokens = hetrt::format::kDefaultKvBlockSize;

DeviceKind kindOf(hardware::DeviceKind kind) {
  switch (kind) {
  case hardware::DeviceKind::Cpu:
    return DeviceKind::cpu;
  case hardware::DeviceKind::Cuda:
    return DeviceKind::cuda;
  case hardware::DeviceKind::Hip:
    return DeviceKind::hip;
  case hardware::DeviceKind::Spirv:
    return DeviceKind::spirv;
  }
  return DeviceKind::cpu;
}

/// The IR's names for the system's devices and the plan's memories.
struct PlanAttrs {
  std::vector<DeviceAttr> devices;
  std::vector<MemorySpaceAttr> memories;
};

FailureOr<PlanAttrs> attrsOf(ModuleOp module, const hardware::System &system,
                             const partition::ModelPlan &plan) {
  MLIRContext *context = module.getContext();
  PlanAttrs attrs;
  for (const hardware::SystemDevice &entry : system.devices) {
    uint64_t memory = entry.device.memory.empty()
                          ? 0
                          : entry.device.memory.front().capacityBytes;
    auto deviceError = [&] {
      return mlir::emitError(module.getLoc()) << "het-partition: system " << system.name
                                << ", device \"" << entry.id << "\": ";
    };
    if (failed(DeviceAttr::verify(deviceError, entry.id,
                                  kindOf(entry.device.kind), entry.device.arch,
                                  memory)))
      return failure();
    attrs.devices.push_back(DeviceAttr::get(context, entry.id,
                                            kindOf(entry.device.kind),
                                            entry.device.arch, memory));
  }
  for (const partition::MemoryUse &use : plan.memories) {
    const hardware::SystemDevice &entry = system.devices[use.device];
    const hardware::MemoryTier &tier = entry.device.memory[use.tier];
    std::optional<MemoryKind> kind = symbolizeMemoryKind(tier.space);
    if (!kind)
      // A tier that does not say is the device's own kind of memory.
      kind = getHomeMemorySpace(attrs.devices[use.device]).getKind();
    attrs.memories.push_back(MemorySpaceAttr::get(context, *kind, entry.id));
  }
  return attrs;
}

struct WeightUnit {
  /// Index of the unit holding the weight (its memory is that unit's).
  size_t unit = 0;
  /// Whether reading it ties an op to that unit. Global tables other than
  /// the embedding, the output and its norm (rope_freqs) are read by every
  /// layer and place nothing.
  bool placesReaders = false;
};

WeightUnit unitOfWeight(StringRef name, size_t numUnits) {
  cost::WeightInfo info;
  info.name = name.str();
  cost::classifyWeight(info);
  return {cost::unitIndexOf(info, numUnits),
          info.layer >= 0 || info.role == cost::WeightRole::Embedding ||
              info.role == cost::WeightRole::Output ||
              info.name == "output_norm.weight"};
}

/// The decoder unit of every op of one function: the latest unit among its
/// operands and the weights it reads (so the residual add closing a layer's
/// attention stays with it); ops that read no unit's value take their first
/// user's unit, unless they yield no tensor (shape bookkeeping), which stays
/// unplaced (-1).
llvm::DenseMap<Operation *, int> unitsOf(FunctionOpInterface function,
                                         size_t numUnits) {
  llvm::DenseMap<Operation *, int> unitOfOp;
  llvm::DenseMap<Value, int> unitOfValue;
  std::vector<Operation *> order;
  for (Block &block : function.getFunctionBody())
    for (Operation &op : block) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      order.push_back(&op);
      if (auto get = dyn_cast<llm::GetWeightOp>(op)) {
        WeightUnit weight = unitOfWeight(get.getName(), numUnits);
        if (weight.placesReaders)
          unitOfValue[get.getResult()] = static_cast<int>(weight.unit);
        continue;
      }
      llvm::SetVector<Value> used(op.operand_begin(), op.operand_end());
      for (Region &region : op.getRegions())
        getUsedValuesDefinedAbove(region, used);
      int unit = -1;
      for (Value value : used) {
        auto known = unitOfValue.find(value);
        if (known != unitOfValue.end())
          unit = std::max(unit, known->second);
      }
      unitOfOp[&op] = unit;
      if (unit >= 0)
        for (Value result : op.getResults())
          unitOfValue[result] = unit;
    }
  // Backwards, so a chain of unplaced producers takes its consumers' unit.
  for (Operation *op : llvm::reverse(order)) {
    if (isa<llm::GetWeightOp>(op) || unitOfOp[op] >= 0)
      continue;
    bool yieldsTensor = llvm::any_of(op->getResultTypes(), [](Type type) {
      return isa<TensorType, llm::KVCacheType>(type);
    });
    if (!yieldsTensor && isPure(op))
      continue;
    int unit = -1;
    for (Operation *user : op->getUsers()) {
      Operation *top = function.getFunctionBody().findAncestorOpInRegion(*user);
      auto known = top ? unitOfOp.find(top) : unitOfOp.end();
      if (known != unitOfOp.end() && known->second >= 0)
        unit = unit < 0 ? known->second : std::min(unit, known->second);
    }
    unitOfOp[op] = std::max(unit, 0);
  }
  return unitOfOp;
}

struct HetPartitionPass
    : hetc::het::impl::HetPartitionPassBase<HetPartitionPass> {
  using HetPartitionPassBase::HetPartitionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(partition(module)))
      signalPassFailure();
  }

  LogicalResult partition(ModuleOp module) {
    if (module->hasAttr(HetDialect::kPlanAttrName))
      return emitError(module.getLoc())
             << "het-partition: the module is already partitioned (it has "
             << HetDialect::kPlanAttrName << "); partition the imported module";
    if (system.empty())
      return emitError(module.getLoc())
             << "het-partition needs a system: pass system=NAME (a system of "
                "the catalog, such as rtx4090-ryzen) or system=FILE.json (as "
                "hetc calibrate writes it)";
    std::optional<partition::Objective> goal =
        partition::parseObjective(objective);
    if (!goal)
      return emitError(module.getLoc())
             << "het-partition: unknown objective \"" << objective
             << "\"; use latency, throughput, cost or energy";
    if (batch < 1)
      return emitError(module.getLoc())
             << "het-partition: batch is " << static_cast<int64_t>(batch)
             << "; it must be at least 1";
    std::string error;
    std::optional<cost::ModelShape> shape = shapeFromModule(module, error);
    if (!shape)
      return emitError(module.getLoc()) << "het-partition: " << error;
    int64_t capacity = cacheCapacityOf(module);
    // By default a prompt of 128 tokens, or half of a smaller cache.
    int64_t prompt = promptTokens != 0 ? static_cast<int64_t>(promptTokens)
                                       : std::max<int64_t>(
                                             1, std::min<int64_t>(128, capacity / 2));
    if (prompt < 1 || prompt > capacity)
      return emitError(module.getLoc())
             << "het-partition: prompt-tokens is " << prompt
             << "; it must be between 1 and the KV cache's capacity ("
             << capacity << ")";
    std::string catalogDir =
        catalog.empty() ? hardware::defaultCatalogDir() : catalog.getValue();
    std::optional<hardware::System> machine =
        hardware::findSystem(system, catalogDir, error);
    if (!machine)
      return emitError(module.getLoc()) << "het-partition: " << error;
    std::vector<std::string> caps(deviceMemory.begin(), deviceMemory.end());
    std::vector<std::string> warnings;
    std::vector<std::string> computing(computeDevices.begin(),
                                       computeDevices.end());
    if (!hardware::applyDeviceMemoryCaps(caps, *machine, warnings, error) ||
        !hardware::restrictComputeDevices(computing, *machine, error))
      return emitError(module.getLoc()) << "het-partition: " << error;
    for (const std::string &warning : warnings)
      emitWarning(module.getLoc()) << "het-partition: " << warning;
    std::map<std::string, uint64_t> reserved;
    if (failed(applyReserves(module, *machine, reserved)))
      return failure();

    partition::PlanRequest request;
    request.objective = *goal;
    request.workload.batch = batch;
    request.workload.promptTokens = prompt;
    // Reserve the whole cache the module declares (a decode step's context
    // includes the prompt), as the programs allocate it.
    request.workload.context = capacity;
    // The cache every layer appends to (the importer gives them one type).
    llm::KVCacheType cacheType;
    module.walk([&](llm::KVAppendOp append) {
      cacheType = append.getCache().getType();
      return WalkResult::interrupt();
    });
    if (cacheType)
      request.kvElementBytes =
          cacheType.getElementType().getIntOrFloatBitWidth() / 8.0;
    std::optional<partition::ModelPlan> plan =
        partition::planModel(*shape, *machine, request, error);
    if (!plan)
      return emitError(module.getLoc()) << "het-partition: " << error;
    FailureOr<PlanAttrs> attrs = attrsOf(module, *machine, *plan);
    if (failed(attrs))
      return failure();

    kvTiers.clear();
    partition::KvTierPlan tiers;
    if (cacheType)
      tiers = kvTierPlan(*shape, request, *machine, *plan, reserved);
    if (cacheType && failed(declareKVTiers(module, cacheType, *plan, *attrs,
                                           tiers.hostBlocks)))
      return failure();
    for (auto function : module.getOps<FunctionOpInterface>())
      if (failed(place(function, *plan, *attrs)))
        return failure();
    writeSummary(module, *machine, *plan, reserved, tiers, prompt, capacity);
    return success();
  }

  /// The host tier of the KV cache (partition::planKvTiers) for the
  /// module's cache, in blocks of kKVBlockTokens positions of every layer.
  partition::KvTierPlan
  kvTierPlan(const cost::ModelShape &shape,
             const partition::PlanRequest &request,
             const hardware::System &machine, const partition::ModelPlan &plan,
             const std::map<std::string, uint64_t> &reserved) {
    uint64_t hostReserve = 0;
    for (const hardware::SystemDevice &entry : machine.devices)
      if (entry.device.kind == hardware::DeviceKind::Cpu) {
        if (auto reserve = reserved.find(entry.id); reserve != reserved.end())
          hostReserve = reserve->second;
        break;
      }
    return partition::planKvTiers(plan, machine, shape, request.kvElementBytes,
                                  kKVBlockTokens,
                                  request.workload.kvPositions(), hostReserve);
  }

  /// One het.kv_tiers per layer: the memory the plan keeps its cache in
  /// (the pool), then host DRAM for `hostBlocks` more blocks where the pool
  /// is elsewhere (a cache the CPU keeps has both in its DRAM).
  LogicalResult declareKVTiers(ModuleOp module, llm::KVCacheType cacheType,
                               const partition::ModelPlan &plan,
                               const PlanAttrs &attrs, int64_t hostBlocks) {
    OpBuilder builder(module.getBodyRegion());
    MLIRContext *context = module.getContext();
    int64_t blocks =
        (cacheType.getCapacity() + kKVBlockTokens - 1) / kKVBlockTokens;
    // Host DRAM: the memory space of the plan's CPU, if it has one.
    std::optional<MemorySpaceAttr> host;
    for (size_t m = 0; m < plan.memories.size(); ++m)
      if (plan.memories[m].tier == 0 &&
          attrs.devices[plan.memories[m].device].getKind() == DeviceKind::cpu)
        host = attrs.memories[m];
    for (const partition::PlacedUnit &unit : plan.units) {
      if (unit.kvMemory < 0)
        continue;
      MemorySpaceAttr space = attrs.memories[unit.kvMemory];
      SmallVector<Attribute, 2> declared;
      if (host && space == *host) {
        declared.push_back(KVTierAttr::get(context, space.getKind(),
                                           space.getOwner(),
                                           blocks + hostBlocks));
      } else {
        declared.push_back(KVTierAttr::get(context, space.getKind(),
                                           space.getOwner(), blocks));
        if (host && hostBlocks > 0)
          declared.push_back(KVTierAttr::get(context, host->getKind(),
                                             host->getOwner(), hostBlocks));
      }
      std::string name = "kv.blk." + std::to_string(unit.unit.layer);
      auto tiers = KVTiersOp::create(
          builder, module.getLoc(), builder.getStringAttr(name),
          TypeAttr::get(cacheType),
          builder.getI64IntegerAttr(kKVBlockTokens),
          builder.getArrayAttr(declared));
      kvTiers[unit.unit.layer] = tiers;
    }
    return success();
  }

  LogicalResult place(FunctionOpInterface function,
                      const partition::ModelPlan &plan, const PlanAttrs &attrs) {
    llvm::DenseMap<Operation *, int> units =
        unitsOf(function, plan.units.size());
    WalkResult result = function.walk([&](Operation *op) {
      if (auto get = dyn_cast<llm::GetWeightOp>(op)) {
        const partition::PlacedUnit &owner =
            plan.units[unitOfWeight(get.getName(), plan.units.size()).unit];
        op->setAttr(HetDialect::kMemorySpaceAttrName,
                    attrs.memories[owner.weightMemory]);
        return WalkResult::advance();
      }
      auto found = units.find(op);
      if (found == units.end() || found->second < 0)
        return WalkResult::advance();
      const partition::PlacedUnit &unit = plan.units[found->second];
      op->setAttr(HetDialect::kPlacementAttrName, attrs.devices[unit.device]);
      if (auto append = dyn_cast<llm::KVAppendOp>(op))
        if (failed(placeCache(function, append, unit, attrs)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }

  /// The cache argument `append` extends lives where the plan keeps the
  /// cache of `unit`'s layer.
  LogicalResult placeCache(FunctionOpInterface function, llm::KVAppendOp append,
                           const partition::PlacedUnit &unit,
                           const PlanAttrs &attrs) {
    auto argument = dyn_cast<BlockArgument>(append.getCache());
    if (!argument || !argument.getOwner()->isEntryBlock() ||
        argument.getOwner()->getParentOp() != function.getOperation())
      return success();
    auto tiers = kvTiers.find(unit.unit.layer);
    if (unit.kvMemory < 0 || tiers == kvTiers.end())
      return append.emitOpError()
             << "belongs to " << unit.unit.name
             << ", which the plan gives no KV cache; het-partition expects "
                "llm.kv_append only in a layer's attention";
    unsigned index = argument.getArgNumber();
    MemorySpaceAttr space = attrs.memories[unit.kvMemory];
    auto existing = function.getArgAttrOfType<MemorySpaceAttr>(
        index, HetDialect::kMemorySpaceAttrName);
    if (existing && existing != space)
      return append.emitOpError()
             << "extends argument #" << index << ", already placed in "
             << existing << " by another layer; give each layer its own cache";
    function.setArgAttr(index, HetDialect::kMemorySpaceAttrName, space);
    function.setArgAttr(index, HetDialect::kKVCacheAttrName,
                        FlatSymbolRefAttr::get(tiers->second.getSymNameAttr()));
    return success();
  }

  /// Takes each `reserve-memory` entry out of its device's home memory,
  /// recording it in `reserved`.
  LogicalResult applyReserves(ModuleOp module, hardware::System &machine,
                              std::map<std::string, uint64_t> &reserved) {
    for (const std::string &entry : reserveMemory) {
      auto fail = [&](const std::string &why) {
        return emitError(module.getLoc())
               << "het-partition: reserve-memory " << entry << ": " << why;
      };
      size_t equals = entry.find('=');
      if (equals == std::string::npos || equals == 0)
        return fail("write DEVICE=SIZE, e.g. gpu0=64MiB");
      std::string id = entry.substr(0, equals);
      int index = machine.deviceIndex(id);
      if (index < 0)
        return fail(machine.name + " has no device \"" + id + "\"");
      std::optional<uint64_t> bytes =
          hetrt::format::parseByteSize(entry.substr(equals + 1));
      if (!bytes)
        return fail(std::string("the size must be ") +
                    hetrt::format::kByteSizeHint);
      std::vector<hardware::MemoryTier> &memory =
          machine.devices[index].device.memory;
      if (memory.empty() || *bytes >= memory.front().capacityBytes)
        return fail("leaves nothing of " + id +
                    "'s home memory to plan with; give it more memory "
                    "(--device-memory) or reserve less");
      if (reserved.count(id))
        return fail(id + " is reserved twice; give one size per device");
      memory.front().capacityBytes -= *bytes;
      reserved[id] = *bytes;
    }
    return success();
  }

  void writeSummary(ModuleOp module, const hardware::System &machine,
                    const partition::ModelPlan &plan,
                    const std::map<std::string, uint64_t> &reserved,
                    const partition::KvTierPlan &tiers, int64_t prompt,
                    int64_t context) {
    Builder b(module.getContext());
    NamedAttrList units, memory;
    for (size_t d = 0; d < plan.devices.size(); ++d) {
      const partition::DeviceUse &device = plan.devices[d];
      units.append(device.id, b.getI64IntegerAttr(device.units));
      // What the plan keeps in the device's memories, as the runtime
      // counts it (a CPU's weights are the mapped model file).
      int64_t weights = 0, kv = 0, streamBuffers = 0;
      for (const partition::MemoryUse &use : plan.memories)
        if (use.device == static_cast<int>(d)) {
          weights += static_cast<int64_t>(use.weightBytes);
          kv += static_cast<int64_t>(use.kvBytes);
          streamBuffers += static_cast<int64_t>(use.streamBufferBytes);
        }
      // The runtime allocates in the device's home memory, with what the
      // plan left free for the programs' work.
      int64_t capacity = 0;
      int index = machine.deviceIndex(device.id);
      if (index >= 0 && !machine.devices[index].device.memory.empty())
        capacity = static_cast<int64_t>(
            machine.devices[index].device.memory.front().capacityBytes);
      if (auto reserve = reserved.find(device.id); reserve != reserved.end())
        capacity += static_cast<int64_t>(reserve->second);
      memory.append(device.id,
                    b.getDictionaryAttr(
                        {b.getNamedAttr("weight_bytes",
                                        b.getI64IntegerAttr(weights)),
                         b.getNamedAttr("kv_cache_bytes",
                                        b.getI64IntegerAttr(kv)),
                         b.getNamedAttr("stream_buffer_bytes",
                                        b.getI64IntegerAttr(streamBuffers)),
                         b.getNamedAttr("capacity_bytes",
                                        b.getI64IntegerAttr(capacity))}));
    }
    NamedAttrList summary;
    summary.append("system", b.getStringAttr(machine.name));
    summary.append("objective", b.getStringAttr(objective.getValue()));
    summary.append("batch", b.getI64IntegerAttr(batch));
    summary.append("prompt_tokens", b.getI64IntegerAttr(prompt));
    summary.append("decode_tokens_per_s",
                   b.getF64FloatAttr(plan.decodeTokensPerS));
    summary.append("prefill_tokens_per_s",
                   b.getF64FloatAttr(plan.prefillTokensPerS));
    summary.append("joules_per_token", b.getF64FloatAttr(plan.joulesPerToken));
    summary.append("usd_per_million_tokens",
                   b.getF64FloatAttr(plan.usdPerMillionTokens));
    summary.append("limit", b.getStringAttr(plan.limit));
    // The KV cache's host tier (het.kv_tiers), for the runtime's budget.
    summary.append("kv_host_blocks", b.getI64IntegerAttr(tiers.hostBlocks));
    // How it keeps them: int8 where the link is the bottleneck.
    summary.append("kv_tier_format",
                   b.getStringAttr(tiers.int8 ? "int8" : "exact"));
    summary.append("units", b.getDictionaryAttr(units));
    summary.append("memory", b.getDictionaryAttr(memory));
    // The step at the planned context and with an empty cache: a step at
    // another context lies between, as each unit's does.
    double emptyCache = plan.decodeStepSeconds;
    for (const partition::PlacedUnit &unit : plan.units)
      emptyCache -= unit.decodeSeconds - unit.emptyCacheDecodeSeconds;
    summary.append("decode_seconds_per_step",
                   b.getF64FloatAttr(plan.decodeStepSeconds));
    summary.append("decode_seconds_per_step_empty_cache",
                   b.getF64FloatAttr(emptyCache));
    summary.append("context", b.getI64IntegerAttr(context));
    module->setAttr(HetDialect::kPlanAttrName, b.getDictionaryAttr(summary));
  }

  std::map<int, KVTiersOp> kvTiers;
};

} // namespace
