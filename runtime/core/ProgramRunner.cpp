#include "runtime/core/ProgramRunner.h"

#include "runtime/backends/cpu/CpuDevice.h"

#include "runtime/format/ProgramJson.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace hetrt::core {

using hetc::abi::BufferRole;
using hetc::abi::ProgramBuffer;
using hetc::abi::ProgramStep;
using hetc::abi::ProgramValue;
using hetc::abi::StepKind;

namespace {

bool fail(hal::Error &error, const std::string &message,
          Failure kind = Failure::InvalidInput) {
  error.kind = kind;
  error.message = message;
  return false;
}

/// Whole 32-bit words, so every kernel may read its buffers as words.
uint64_t paddedBytes(int64_t bytes) {
  return std::max<uint64_t>(4, (static_cast<uint64_t>(bytes) + 3) / 4 * 4);
}

/// The largest buffer a program may ask for: far past any model's, small
/// enough that a forged program cannot exhaust memory by itself.
constexpr int64_t kMaxBufferBytes = int64_t(1) << 40;

} // namespace

ProgramRunner::~ProgramRunner() {
  for (RunnerDevice &device : devices_)
    for (hal::Queue *queue : device.queues())
      if (queue) {
        hal::Error ignored;
        (void)queue->finish(ignored);
      }
}

std::unique_ptr<ProgramRunner>
ProgramRunner::create(hal::Device &device, hal::ExecutableFormat format,
                      const std::string &binary,
                      const std::vector<hal::KernelSignature> &kernels,
                      std::vector<Entry> entries,
                      const format::GgufFile &weights, hal::Error &error) {
  return create({{&device, format, binary, kernels, std::string()}}, std::move(entries),
                weights, error);
}

std::unique_ptr<ProgramRunner>
ProgramRunner::create(std::vector<DeviceCode> devices,
                      std::vector<Entry> entries,
                      const format::GgufFile &weights, hal::Error &error) {
  std::unique_ptr<ProgramRunner> runner(new ProgramRunner());
  for (DeviceCode &code : devices) {
    RunnerDevice device;
    device.stats.name = code.device->info().name;
    device.stats.code = code.description;
    if (code.runsCode) {
      device.executable = code.device->loadExecutable(
          code.format, code.binary, code.kernels, error);
      if (!device.executable)
        return nullptr;
    }
    for (auto [queue, event] :
         {std::pair{&device.queue, &device.event},
          std::pair{&device.copyQueue, &device.copyEvent},
          std::pair{&device.streamQueue, &device.streamEvent}}) {
      *queue = code.device->createQueue(error);
      if (!*queue)
        return nullptr;
      *event = code.device->createEvent(0, error);
      if (!*event)
        return nullptr;
    }
    device.space = runner->memory_.spaceOf(*code.device, 0);
    if (code.memoryBudget > 0 &&
        !runner->memory_.setBudget(device.space, code.memoryBudget,
                                   code.budgetSource, error))
      return nullptr;
    device.code = std::move(code);
    runner->devices_.push_back(std::move(device));
  }
  for (size_t e = 0; e < entries.size(); ++e)
    if (!runner->prepare(e, std::move(entries[e]), weights, error))
      return nullptr;
  if (!runner->finishAll(error))
    return nullptr;
  runner->staging_.clear();
  return runner;
}

bool ProgramRunner::prepare(size_t index, Entry entry,
                            const format::GgufFile &weights,
                            hal::Error &error) {
  Prepared prepared;
  prepared.entry = std::move(entry);
  const hetc::abi::Program &program = prepared.entry.program;
  std::string where = "program " + std::to_string(index);
  if (prepared.entry.maxTokens < 1)
    return fail(error, where + ": takes no tokens");
  if (program.kvBlockSize != 0) {
    if (kvBlockSize_ != 0 && kvBlockSize_ != program.kvBlockSize)
      return fail(error, where + " pages its KV caches in blocks of " +
                             std::to_string(program.kvBlockSize) +
                             " slots, an earlier program in blocks of " +
                             std::to_string(kvBlockSize_));
    kvBlockSize_ = program.kvBlockSize;
  }
  // The program's devices, by name; one unnamed device is the first.
  for (const hetc::abi::ProgramDevice &device : program.devices) {
    int found = -1;
    for (size_t d = 0; d < devices_.size(); ++d)
      if (devices_[d].stats.name == device.name ||
          (device.name.empty() && program.devices.size() == 1 && d == 0))
        found = static_cast<int>(d);
    if (found < 0)
      return fail(error, where + " runs on " + device.name +
                             ", which is not among the devices it was given",
                  Failure::Unsupported);
    hal::ExecutableFormat format =
        device.target == "x86"     ? hal::ExecutableFormat::X86SharedObject
        : device.target == "spirv" ? hal::ExecutableFormat::SpirV
                                   : hal::ExecutableFormat::GpuModule;
    if (device.target == "host-memory" || !devices_[found].code.runsCode) {
      if (device.target != "host-memory" || devices_[found].code.runsCode)
        return fail(error, where + ": " + devices_[found].stats.name +
                               (devices_[found].code.runsCode
                                    ? " runs code, but the program only "
                                      "keeps memory on it"
                                    : " runs no code, but the program "
                                      "runs " + device.target + " code on it"));
    } else if (devices_[found].code.format != format)
      return fail(error, where + ": " + devices_[found].stats.name +
                             " runs other code than the " + device.target +
                             " code the program dispatches");
    prepared.devices.push_back(found);
  }
  prepared.distinctDevices = prepared.devices;
  std::sort(prepared.distinctDevices.begin(), prepared.distinctDevices.end());
  prepared.distinctDevices.erase(std::unique(prepared.distinctDevices.begin(),
                                             prepared.distinctDevices.end()),
                                 prepared.distinctDevices.end());
  // The tables first: the caches are divided into their blocks.
  for (const ProgramBuffer &buffer : program.buffers) {
    if (buffer.role != BufferRole::BlockTable)
      continue;
    // Every program reads the same pools through tables of one size: one
    // table, or a row per token (a batch's program).
    int64_t bytes = buffer.bytes.constant + buffer.bytes.perToken;
    if (!(buffer.bytes == ProgramValue::fixed(bytes) ||
          buffer.bytes == ProgramValue::tokens(bytes)) ||
        bytes <= 0 ||
        bytes % 4 != 0 || bytes / 4 > std::numeric_limits<int32_t>::max() ||
        (tableEntries_ != 0 && tableEntries_ != bytes / 4))
      return fail(error, where + ": block table \"" + buffer.name +
                             "\" is not a fixed number of i32 ids (per "
                             "token or in all), as many as the other "
                             "programs' tables");
    tableEntries_ = bytes / 4;
  }
  for (const ProgramBuffer &buffer : program.buffers) {
    int device = prepared.devices[buffer.device];
    hal::Device &hal = *devices_[device].code.device;
    hal::Queue &queue = *devices_[device].queue;
    prepared.inPlace.push_back(nullptr);
    if (buffer.role == BufferRole::WeightFile) {
      if (!devices_[device].executable)
        return fail(error, where + ": keeps the model file on " +
                               devices_[device].stats.name +
                               ", which runs no code to read it");
      // Read in place: CPU segment code reads the weights at compiled offsets.
      std::shared_ptr<hal::Buffer> &file = shared_[{device, "\n"}].buffer;
      if (!file) {
        const std::vector<int64_t> *layouts =
            cpu::segmentWeightLayouts(*devices_[device].executable);
        std::unique_ptr<cpu::CpuWeights> &cpuWeights = cpuWeights_[device];
        std::string why;
        cpuWeights = cpu::CpuWeights::prepare(
            weights, layouts ? *layouts : std::vector<int64_t>{},
            devices_[device].stats.name + "'s code", why);
        if (!cpuWeights)
          return fail(error, why);
        file = hal.importHostMemory(cpuWeights->data(), cpuWeights->size(),
                                    error);
      }
      if (!file)
        return false;
      prepared.buffers.push_back(file);
      continue;
    }
    int64_t bytes = buffer.bytes.at(prepared.entry.maxTokens, 0);
    if (bytes <= 0 || bytes > kMaxBufferBytes)
      return fail(error, where + ": buffer \"" + buffer.name + "\" of " +
                             std::to_string(bytes) +
                             " bytes is outside 1 byte to 1 TiB");
    bool shared = buffer.role == BufferRole::Weight ||
                  buffer.role == BufferRole::KvCache ||
                  buffer.role == BufferRole::StreamedWeight;
    if (buffer.role == BufferRole::KvCache) {
      // The steps of one sequence read one cache: it may not move.
      auto [home, added] = cacheDevices_.emplace(buffer.name, device);
      if (!added && home->second != device)
        return fail(error, where + " keeps KV cache \"" + buffer.name +
                               "\" on " + devices_[device].stats.name +
                               ", but an earlier program keeps it on " +
                               devices_[home->second].stats.name);
    }
    if (shared) {
      auto found = shared_.find({device, buffer.name});
      if (found != shared_.end()) {
        if (found->second.bytes != bytes)
          return fail(error, where + ": buffer \"" + buffer.name +
                                 "\" has another size than in an earlier "
                                 "program");
        prepared.buffers.push_back(found->second.buffer);
        prepared.inPlace.back() = found->second.inPlace;
        continue;
      }
    }
    const format::GgufTensorInfo *tensor = nullptr;
    if (buffer.role == BufferRole::Weight) {
      tensor = weights.findTensor(buffer.weight);
      if (!tensor)
        return fail(error, weights.path() + ": has no tensor \"" +
                               buffer.weight + "\", which " + where +
                               " reads; give the model the program was "
                               "compiled from");
      if (static_cast<int64_t>(tensor->sizeBytes) != bytes)
        return fail(error, weights.path() + ": tensor \"" + buffer.weight +
                               "\" holds " + std::to_string(tensor->sizeBytes) +
                               " bytes, but " + where + " reads " +
                               std::to_string(bytes) +
                               "; give the model the program was compiled "
                               "from");
    }
    // A weight a CPU holds for another device to stream is read where the
    // model file maps it.
    bool inPlace = tensor && hal.info().kind == "cpu";
    MemoryRole role = buffer.role == BufferRole::Weight ? MemoryRole::Weights
                      : buffer.role == BufferRole::KvCache
                          ? MemoryRole::KvCache
                      : buffer.role == BufferRole::StreamedWeight
                          ? MemoryRole::StreamBuffers
                          : MemoryRole::Work;
    std::shared_ptr<hal::Buffer> allocated =
        inPlace ? hal.importHostMemory(weights.tensorData(*tensor), bytes, error)
                : memory_.allocate(hal, 0, paddedBytes(bytes), role,
                                   where + "'s buffer \"" + buffer.name + "\"",
                                   error);
    if (!allocated)
      return false;
    prepared.buffers.push_back(allocated);
    if (inPlace)
      prepared.inPlace.back() = weights.tensorData(*tensor);
    // A batch's program gives a row of logits per token.
    if (buffer.role == BufferRole::Logits)
      vocab_ = buffer.bytes.at(1, 0) / 4;
    if (!shared)
      continue;
    shared_[{device, buffer.name}] = {allocated, bytes,
                                      prepared.inPlace.back()};
    if (buffer.role == BufferRole::KvCache) {
      // A block's run is a whole share of the cache: [2, runs, blocks,
      // run]. (A program without a table reads it unpaged; sessions refuse
      // it.)
      if (tableEntries_ > 0 &&
          bytes % (2 * buffer.runs * tableEntries_) != 0)
        return fail(error, where + ": KV cache \"" + buffer.name + "\" of " +
                               std::to_string(bytes) +
                               " bytes is not two parts of " +
                               std::to_string(buffer.runs) + " runs of the "
                               "block table's " +
                               std::to_string(tableEntries_) + " blocks");
      if (tableEntries_ > 0)
        kvCaches_.push_back(
            {device, allocated, static_cast<uint64_t>(buffer.runs),
             static_cast<uint64_t>(bytes /
                                   (2 * buffer.runs * tableEntries_))});
      if (!queue.fill(*allocated, 0, allocated->size(), 0, 4, error))
        return false;
      continue;
    }
    if (inPlace || buffer.role == BufferRole::StreamedWeight)
      continue;
    std::vector<char> staged(allocated->size(), 0);
    std::memcpy(staged.data(), weights.tensorData(*tensor), bytes);
    staging_.push_back(std::move(staged));
    if (!queue.write(staging_.back().data(), *allocated, 0, allocated->size(),
                     error))
      return false;
  }
  std::string problem;
  if (!format::checkTransferWaits(program, problem))
    return fail(error, where + ": " + problem);
  prepared.transferDone.assign(program.steps.size(), 0);
  prepared.streamed.assign(program.steps.size(), false);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep &step = program.steps[s];
    std::string stepWhere = where + ", step " + std::to_string(s);
    RunnerDevice &device = devices_[prepared.devices[step.device]];
    for (size_t b = 0; b < step.buffers.size(); ++b) {
      int32_t buffer = step.buffers[b];
      if (buffer < 0 || static_cast<size_t>(buffer) >= program.buffers.size())
        return fail(error, stepWhere + ": buffer " + std::to_string(buffer) +
                               " does not exist");
      // A transfer reads its source on another device; everything else a
      // step touches is on its own.
      bool source = step.kind == StepKind::Transfer && b == 0;
      if (!source && program.buffers[buffer].device != step.device)
        return fail(error, stepWhere + ": buffer \"" +
                               program.buffers[buffer].name +
                               "\" is on another device than the step");
    }
    prepared.params.push_back(nullptr);
    prepared.kernels.push_back(-1);
    if (step.kind == StepKind::Transfer) {
      if (step.buffers.size() != 2 || step.params.size() != 1)
        return fail(error, stepWhere + ": a transfer that is not (source, "
                                       "target) with a size");
      // A weight the host can read is streamed from where it lives.
      prepared.streamed[s] =
          program.buffers[step.buffers[0]].device != step.device &&
          weightHome(prepared, step.buffers[0]);
      continue;
    }
    if (step.kind == StepKind::Wait)
      continue;
    if (step.kind == StepKind::RopeTable) {
      if (step.buffers.size() < 2 || step.buffers.size() > 3 ||
          program.buffers[step.buffers[0]].role != BufferRole::RopeTable ||
          program.buffers[step.buffers[1]].role != BufferRole::Positions ||
          step.rotaryDim < 2 || step.rotaryDim % 2 != 0 ||
          step.rotaryDim > step.headDim || !(step.ropeTheta > 0))
        return fail(error, stepWhere + ": a RoPE table step that is not "
                                       "(table, positions[, factors]) with "
                                       "an even rotary size within the "
                                       "head and a positive base");
      if (step.buffers.size() == 3) {
        const ProgramBuffer &factors = program.buffers[step.buffers[2]];
        const format::GgufTensorInfo *tensor =
            weights.findTensor(factors.weight);
        if (!tensor || tensor->format != format::BlockFormat::F32 ||
            static_cast<int64_t>(tensor->sizeBytes) < step.rotaryDim / 2 * 4)
          return fail(error, stepWhere + ": the RoPE factors \"" +
                                 factors.weight +
                                 "\" are not f32 values, one per pair");
        std::vector<float> values(step.rotaryDim / 2);
        std::memcpy(values.data(), weights.tensorData(*tensor),
                    values.size() * 4);
        factors_[factors.weight] = std::move(values);
      }
      continue;
    }
    if (!device.executable)
      return fail(error, stepWhere + ": dispatches on " + device.stats.name +
                             ", which runs no code in this program");
    int kernel = device.executable->kernelIndex(step.kernel);
    if (kernel < 0)
      return fail(error, stepWhere + ": the kernel library has no kernel \"" +
                             step.kernel + "\"");
    // The kernel library's kernels (SPIR-V, CUDA, HIP) take their
    // parameters as one more buffer.
    bool library =
        device.code.format != hal::ExecutableFormat::X86SharedObject;
    size_t bindings = step.buffers.size() + (library ? 1 : 0);
    int takes = device.executable->kernels()[kernel].bindings;
    if (takes != static_cast<int>(bindings))
      return fail(error, stepWhere + ": kernel \"" + step.kernel +
                             "\" takes " + std::to_string(takes) +
                             " buffers, not " + std::to_string(bindings));
    prepared.kernels.back() = kernel;
    if (!library)
      continue;
    std::shared_ptr<hal::Buffer> params = memory_.allocate(
        *device.code.device, 0, paddedBytes(step.params.size() * 4),
        MemoryRole::Work, stepWhere + "'s parameters", error);
    if (!params)
      return false;
    prepared.params.back() = params;
  }
  prepared.writtenParams.resize(program.steps.size());
  // A weight copy of fixed size into a device with nothing before it in the
  // program can be sent before the run.
  std::vector<bool> busy(program.devices.size(), false);
  prepared.leading.assign(program.steps.size(), false);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep &step = program.steps[s];
    bool weightCopy =
        prepared.streamed[s] &&
        program.buffers[step.buffers[1]].role == BufferRole::StreamedWeight &&
        step.params[0].perToken == 0 && step.params[0].perKey == 0;
    // What run() checks of every transfer's size, checked here for the
    // copies prefetch() sends without it.
    if (weightCopy) {
      int64_t bytes = step.params[0].at(0, 0);
      weightCopy =
          bytes >= 0 &&
          static_cast<uint64_t>(bytes) <=
              prepared.buffers[step.buffers[0]]->size() &&
          static_cast<uint64_t>(bytes) <=
              prepared.buffers[step.buffers[1]]->size();
    }
    if (weightCopy && !busy[step.device])
      prepared.leading[s] = true;
    else if (step.kind != StepKind::Wait && !weightCopy)
      busy[step.device] = true;
  }
  prepared_.push_back(std::move(prepared));
  return true;
}

const void *ProgramRunner::weightHome(Prepared &prepared,
                                      int32_t buffer) const {
  if (prepared.entry.program.buffers[buffer].role != BufferRole::Weight)
    return nullptr;
  if (const void *mapped = prepared.inPlace[buffer])
    return mapped;
  return prepared.buffers[buffer]->hostPointer();
}

bool ProgramRunner::sendWeight(Prepared &prepared, size_t s, int64_t bytes,
                               hal::Error &error) {
  const ProgramStep &step = prepared.entry.program.steps[s];
  RunnerDevice &device = devices_[prepared.devices[step.device]];
  // A weight never changes: its copy waits only for the target's steps
  // before it (the last readers of the buffer it fills), and is written
  // from where the weight lives.
  uint64_t reached = ++device.eventValue;
  uint64_t copied = ++device.streamValue;
  hal::Queue &stream = *device.streamQueue;
  if (!device.queue->signal(*device.event, reached, error) ||
      !stream.wait(*device.event, reached, error) ||
      !stream.write(weightHome(prepared, step.buffers[0]),
                    *prepared.buffers[step.buffers[1]], 0, bytes, error) ||
      !stream.signal(*device.streamEvent, copied, error))
    return false;
  prepared.transferDone[s] = copied;
  return true;
}

bool ProgramRunner::prefetch(size_t entry, hal::Error &error) {
  if (entry >= prepared_.size())
    return fail(error, "prefetch: there is no program " + std::to_string(entry));
  Prepared &prepared = prepared_[entry];
  prefetched_.reset();
  for (size_t s = 0; s < prepared.leading.size(); ++s) {
    if (!prepared.leading[s])
      continue;
    const ProgramStep &step = prepared.entry.program.steps[s];
    int64_t bytes = step.params[0].at(0, 0);
    if (!sendWeight(prepared, s, bytes, error)) {
      hal::Error ignored;
      (void)finishAll(ignored);
      return false;
    }
  }
  prefetched_ = entry;
  return true;
}

bool ProgramRunner::finishAll(hal::Error &error) {
  bool ok = true;
  for (RunnerDevice &device : devices_)
    for (hal::Queue *queue : device.queues()) {
      hal::Error failure;
      if (!queue->finish(failure) && ok) {
        error = failure;
        ok = false;
      }
    }
  // Every prefetched block is written (or its queue failed).
  pendingKvWrites_.clear();
  return ok;
}

size_t ProgramRunner::kvBlockBytes() const {
  size_t bytes = 0;
  for (const KvCacheBuffer &cache : kvCaches_)
    bytes += 2 * cache.runs * cache.runBytes;
  return bytes;
}

std::vector<std::pair<std::string, uint64_t>>
ProgramRunner::kvBlockShares() const {
  std::vector<MemorySpaceStats> spaces = memory_.stats();
  std::vector<std::pair<std::string, uint64_t>> shares;
  for (const KvCacheBuffer &cache : kvCaches_) {
    const std::string &name = spaces[devices_[cache.device].space].name;
    auto share = std::find_if(shares.begin(), shares.end(),
                              [&](const auto &s) { return s.first == name; });
    if (share == shares.end())
      share = shares.insert(shares.end(), {name, 0});
    share->second += 2 * cache.runs * cache.runBytes;
  }
  return shares;
}

template <typename Move>
bool ProgramRunner::forEachKvRun(std::initializer_list<int32_t> blocks,
                                 hal::Error &error, Move move) {
  if (!checkKvBlocks(blocks, error) || !finishKvPrefetches(error))
    return false;
  std::vector<hal::Queue *> used;
  size_t at = 0;
  for (const KvCacheBuffer &cache : kvCaches_) {
    hal::Queue &queue = *devices_[cache.device].queue;
    for (uint64_t run = 0; run < 2 * cache.runs; ++run) {
      if (!move(queue, cache, run, at, error))
        return false;
      at += cache.runBytes;
    }
    if (std::find(used.begin(), used.end(), &queue) == used.end())
      used.push_back(&queue);
  }
  for (hal::Queue *queue : used)
    if (!queue->finish(error))
      return false;
  return true;
}

bool ProgramRunner::readKvBlock(int32_t block, std::byte *out,
                                hal::Error &error) {
  return forEachKvRun({block}, error,
                      [&](hal::Queue &queue, const KvCacheBuffer &cache,
                          uint64_t run, size_t at, hal::Error &failure) {
                        return queue.read(*cache.buffer,
                                          kvRunOffset(cache, run, block),
                                          out + at, cache.runBytes, failure);
                      });
}

bool ProgramRunner::writeKvBlock(const std::byte *in, int32_t block,
                                 hal::Error &error) {
  return forEachKvRun({block}, error,
                      [&](hal::Queue &queue, const KvCacheBuffer &cache,
                          uint64_t run, size_t at, hal::Error &failure) {
                        return queue.write(in + at, *cache.buffer,
                                           kvRunOffset(cache, run, block),
                                           cache.runBytes, failure);
                      });
}

bool ProgramRunner::checkKvBlocks(std::initializer_list<int32_t> blocks,
                                  hal::Error &error) const {
  for (int32_t block : blocks)
    if (block < 0 || block >= tableEntries_)
      return fail(error, "block " + std::to_string(block) +
                             " is outside the pool's " +
                             std::to_string(tableEntries_) + " blocks");
  return true;
}

bool ProgramRunner::prefetchKvBlock(const std::byte *in, int32_t block,
                                    hal::Error &error) {
  if (!checkKvBlocks({block}, error))
    return false;
  // The caller reuses `in`; the copy lives until the queues finish.
  staging_.emplace_back(reinterpret_cast<const char *>(in),
                        reinterpret_cast<const char *>(in) + kvBlockBytes());
  const std::byte *staged =
      reinterpret_cast<const std::byte *>(staging_.back().data());
  size_t at = 0;
  for (const KvCacheBuffer &cache : kvCaches_) {
    RunnerDevice &device = devices_[cache.device];
    for (uint64_t run = 0; run < 2 * cache.runs; ++run) {
      if (!device.copyQueue->write(staged + at, *cache.buffer,
                                   kvRunOffset(cache, run, block),
                                   cache.runBytes, error))
        return false;
      at += cache.runBytes;
    }
    uint64_t done = ++device.copyValue;
    if (!device.copyQueue->signal(*device.copyEvent, done, error))
      return false;
    pendingKvWrites_[cache.buffer.get()] = done;
  }
  return true;
}

bool ProgramRunner::finishKvPrefetches(hal::Error &error) {
  if (pendingKvWrites_.empty())
    return true;
  for (RunnerDevice &device : devices_)
    if (!device.copyQueue->finish(error))
      return false;
  pendingKvWrites_.clear();
  return true;
}

bool ProgramRunner::copyKvBlock(int32_t from, int32_t to, hal::Error &error) {
  return forEachKvRun({from, to}, error,
                      [&](hal::Queue &queue, const KvCacheBuffer &cache,
                          uint64_t run, size_t, hal::Error &failure) {
                        return queue.copy(*cache.buffer,
                                          kvRunOffset(cache, run, from),
                                          *cache.buffer,
                                          kvRunOffset(cache, run, to),
                                          cache.runBytes, failure);
                      });
}

std::vector<ProgramRunner::DeviceStats> ProgramRunner::stats() const {
  std::vector<DeviceStats> out;
  for (const RunnerDevice &device : devices_) {
    out.push_back(device.stats);
    out.back().streamNanoseconds = device.streamQueue->busyNanoseconds();
    out.back().streamWaitNanoseconds = device.streamEvent->blockedNanoseconds();
  }
  std::vector<MemorySpaceStats> spaces = memory_.stats();
  for (size_t d = 0; d < devices_.size(); ++d) {
    const MemorySpaceStats &space = spaces[devices_[d].space];
    out[d].weightBytes = space.held(MemoryRole::Weights);
    out[d].kvCacheBytes = space.held(MemoryRole::KvCache);
    out[d].streamBufferBytes = space.held(MemoryRole::StreamBuffers);
    out[d].workBytes = space.held(MemoryRole::Work);
  }
  return out;
}

std::vector<MemorySpaceStats> ProgramRunner::memorySpaces() const {
  std::vector<MemorySpaceStats> spaces = memory_.stats();
  // The copies' waits are the events' to measure.
  for (const RunnerDevice &device : devices_)
    spaces[device.space].waitNanoseconds +=
        device.copyEvent->blockedNanoseconds() +
        device.streamEvent->blockedNanoseconds();
  return spaces;
}

bool ProgramRunner::run(size_t entry, const int32_t *tokens, int64_t count,
                        int64_t start, const int32_t *blockTable,
                        float *logits, hal::Error &error) {
  if (start < 0 || count < 0 ||
      start > std::numeric_limits<int32_t>::max() - count)
    return fail(error, "run: position " + std::to_string(start) +
                           " is outside the 32-bit positions");
  std::vector<int32_t> positions(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t)
    positions[t] = static_cast<int32_t>(start + t);
  return runSteps(entry, tokens, positions.data(), count, blockTable, 1,
                  logits, false, error);
}

bool ProgramRunner::runBatch(size_t entry, const int32_t *tokens,
                             const int32_t *positions, int64_t count,
                             const int32_t *tables, float *logits,
                             hal::Error &error) {
  return runSteps(entry, tokens, positions, count, tables, count, logits,
                  true, error);
}

bool ProgramRunner::runSteps(size_t entry, const int32_t *tokens,
                             const int32_t *positions, int64_t count,
                             const int32_t *tables, int64_t tableRows,
                             float *logits, bool everyToken,
                             hal::Error &error) {
  if (entry >= prepared_.size())
    return fail(error, "run: there is no program " + std::to_string(entry));
  Prepared &prepared = prepared_[entry];
  const hetc::abi::Program &program = prepared.entry.program;
  if (count < 1 || count > prepared.entry.maxTokens)
    return fail(error, "run: " + std::to_string(count) +
                           " tokens, but the program takes 1 to " +
                           std::to_string(prepared.entry.maxTokens));
  // The keys the step reads: up to its last position (each token attends
  // only up to its own).
  int64_t keys = 0;
  for (int64_t t = 0; t < count; ++t) {
    if (positions[t] < 0 || positions[t] == std::numeric_limits<int32_t>::max())
      return fail(error, "run: position " + std::to_string(positions[t]) +
                             " is outside the 32-bit positions");
    keys = std::max<int64_t>(keys, int64_t(positions[t]) + 1);
  }
  // An id past the pools would have the kernels write outside the caches.
  for (int64_t b = 0; b < tableRows * tableEntries_; ++b)
    if (tables[b] < 0 || tables[b] >= tableEntries_)
      return fail(error, "run: entry " + std::to_string(b % tableEntries_) +
                             (tableRows > 1 ? " of row " +
                                                  std::to_string(
                                                      b / tableEntries_)
                                            : std::string()) +
                             " of the block table is block " +
                             std::to_string(tables[b]) +
                             ", outside the pool's " +
                             std::to_string(tableEntries_) + " blocks");
  // The leading streams prefetch() sent serve this entry's run only.
  bool usePrefetched = prefetched_ == entry;
  prefetched_.reset();
  auto stage = [&](const void *bytes, size_t size) -> char * {
    staging_.emplace_back(static_cast<const char *>(bytes),
                          static_cast<const char *>(bytes) + size);
    return staging_.back().data();
  };
  auto queueOf = [&](int programDevice) -> RunnerDevice & {
    return devices_[prepared.devices[programDevice]];
  };
  // Everything queued is waited for before returning, also on failure:
  // the queues read the staging memory and the caller's tokens.
  auto abandon = [&]() {
    hal::Error ignored;
    (void)finishAll(ignored);
    staging_.clear();
    // A write the failed run queued may not have happened.
    for (Prepared &entry : prepared_)
      for (std::vector<int32_t> &written : entry.writtenParams)
        written.clear();
    return false;
  };
  int logitsBuffer = -1;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const ProgramBuffer &buffer = program.buffers[b];
    const void *source = nullptr;
    int64_t bytes = count * 4;
    if (buffer.role == BufferRole::Tokens)
      source = tokens;
    else if (buffer.role == BufferRole::Positions)
      source = positions;
    else if (buffer.role == BufferRole::BlockTable)
      source = tables, bytes = tableRows * tableEntries_ * 4;
    else if (buffer.role == BufferRole::Logits)
      logitsBuffer = static_cast<int>(b);
    if (source && bytes > buffer.bytes.at(count, keys))
      return fail(error, "run: the program's " + buffer.name + " buffer "
                             "takes one sequence; run a batch through a "
                             "program built for one"),
             abandon();
    if (source && !queueOf(buffer.device).queue->write(
                      stage(source, bytes), *prepared.buffers[b], 0, bytes,
                      error))
      return abandon();
  }
  if (logitsBuffer < 0)
    return fail(error, "run: the program has no logits buffer"), abandon();
  int64_t logitBytes = (everyToken ? count : 1) * vocab_ * 4;
  if (logitBytes > program.buffers[logitsBuffer].bytes.at(count, keys))
    return fail(error, "run: the program gives the last token's logits "
                       "only; a batch needs a program built for one"),
           abandon();
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep &step = program.steps[s];
    RunnerDevice &device = queueOf(step.device);
    hal::Queue &queue = *device.queue;
    if (step.kind == StepKind::Transfer) {
      const ProgramBuffer &from = program.buffers[step.buffers[0]];
      hal::Buffer &source = *prepared.buffers[step.buffers[0]];
      hal::Buffer &target = *prepared.buffers[step.buffers[1]];
      int64_t bytes = step.params[0].at(count, keys);
      if (bytes < 0 || static_cast<uint64_t>(bytes) > source.size() ||
          static_cast<uint64_t>(bytes) > target.size())
        return fail(error, "run: step " + std::to_string(s) +
                               " transfers " + std::to_string(bytes) +
                               " bytes, more than its buffers hold"),
               abandon();
      RunnerDevice &sourceDevice = queueOf(from.device);
      if (&sourceDevice == &device) {
        if (!queue.copy(source, 0, target, 0, bytes, error))
          return abandon();
        continue;
      }
      if (prepared.streamed[s]) {
        // Sent by prefetch() already, or now.
        if (!(usePrefetched && prepared.leading[s]) &&
            !sendWeight(prepared, s, bytes, error))
          return abandon();
        device.stats.streamedBytes += static_cast<uint64_t>(bytes);
        memory_.recordMigration(
            queueOf(program.buffers[step.buffers[0]].device).space,
            device.space, 1, static_cast<uint64_t>(bytes));
        continue;
      }
      // Read in order on the source's queue (after the steps that computed
      // the source, before any that reuse it); written by the target's copy
      // queue once the read is done and the target's earlier steps (which
      // may still read the buffer it fills) are, while the target's queue
      // goes on with the steps before the transfer's Wait.
      staging_.emplace_back(static_cast<size_t>(bytes));
      char *host = staging_.back().data();
      uint64_t read = ++sourceDevice.eventValue;
      uint64_t reached = ++device.eventValue;
      uint64_t copied = ++device.copyValue;
      hal::Queue &copy = *device.copyQueue;
      if (!sourceDevice.queue->read(source, 0, host, bytes, error) ||
          !sourceDevice.queue->signal(*sourceDevice.event, read, error) ||
          !queue.signal(*device.event, reached, error) ||
          !copy.wait(*sourceDevice.event, read, error) ||
          !copy.wait(*device.event, reached, error) ||
          !copy.write(host, target, 0, bytes, error) ||
          !copy.signal(*device.copyEvent, copied, error))
        return abandon();
      prepared.transferDone[s] = copied;
      sourceDevice.stats.bytesOut += static_cast<uint64_t>(bytes);
      device.stats.bytesIn += static_cast<uint64_t>(bytes);
      memory_.recordMigration(sourceDevice.space, device.space, 1,
                              static_cast<uint64_t>(bytes));
      continue;
    }
    if (step.kind == StepKind::Wait) {
      hal::Event &copied = prepared.streamed[step.transfer]
                               ? *device.streamEvent
                               : *device.copyEvent;
      if (!queue.wait(copied, prepared.transferDone[step.transfer], error))
        return abandon();
      continue;
    }
    if (step.kind == StepKind::RopeTable) {
      // The CPU's angles: f32 exponent and power, positions as f32.
      int64_t pairs = step.headDim / 2;
      int64_t half = step.rotaryDim / 2;
      const std::vector<float> *factors =
          step.buffers.size() == 3
              ? &factors_[program.buffers[step.buffers[2]].weight]
              : nullptr;
      float exponentStep = static_cast<float>(-2.0 / double(step.rotaryDim));
      std::vector<float> table(count * pairs * 2);
      for (int64_t t = 0; t < count; ++t) {
        float position = static_cast<float>(positions[t]);
        if (step.positionScale != 1.0f)
          position *= step.positionScale;
        for (int64_t j = 0; j < pairs; ++j) {
          float frequency =
              std::pow(step.ropeTheta, static_cast<float>(j) * exponentStep);
          if (factors)
            frequency /= (*factors)[std::min(j, half - 1)];
          float angle = position * frequency;
          table[(t * pairs + j) * 2] = std::cos(angle);
          table[(t * pairs + j) * 2 + 1] = std::sin(angle);
        }
      }
      if (!queue.write(stage(table.data(), table.size() * 4),
                       *prepared.buffers[step.buffers[0]], 0, table.size() * 4,
                       error))
        return abandon();
      continue;
    }
    bool library =
        device.code.format != hal::ExecutableFormat::X86SharedObject;
    // A cache whose prefetched blocks are still on their way is waited for
    // here, by the first step that reads it, not before the run.
    if (!pendingKvWrites_.empty())
      for (int32_t index : step.buffers) {
        auto pending = pendingKvWrites_.find(prepared.buffers[index].get());
        if (pending == pendingKvWrites_.end())
          continue;
        if (!queue.wait(*device.copyEvent, pending->second, error))
          return abandon();
        pendingKvWrites_.erase(pending);
      }
    std::vector<int64_t> values(step.params.size());
    for (size_t p = 0; p < values.size(); ++p) {
      values[p] = step.params[p].at(count, keys);
      if (values[p] < std::numeric_limits<int32_t>::min() ||
          values[p] > std::numeric_limits<int32_t>::max())
        return fail(error, "run: step " + std::to_string(s) + " (" +
                               step.kernel + "): parameter " +
                               std::to_string(p) + " is " +
                               std::to_string(values[p]) + ", past 32 bits"),
               abandon();
    }
    uint32_t groups[3];
    for (int d = 0; d < 3; ++d) {
      int64_t value = step.grid[d].at(count, keys);
      if (value < 1 || value > 65535)
        return fail(error, "run: step " + std::to_string(s) + " (" +
                               step.kernel + ") needs " +
                               std::to_string(value) +
                               " workgroups along one axis; Vulkan devices "
                               "promise 1 to 65535"),
               abandon();
      groups[d] = static_cast<uint32_t>(value);
    }
    std::vector<hal::Buffer *> bindings;
    for (int32_t index : step.buffers)
      bindings.push_back(prepared.buffers[index].get());
    std::string pushConstants;
    if (library) {
      std::vector<int32_t> params(values.begin(), values.end());
      // Most of a decode step's dispatches (its products, norms and adds)
      // take the same parameters every step: their buffers keep them, and
      // only those that follow the position are written again.
      if (!params.empty() && params != prepared.writtenParams[s]) {
        if (!queue.write(stage(params.data(), params.size() * 4),
                         *prepared.params[s], 0, params.size() * 4, error))
          return abandon();
        prepared.writtenParams[s] = std::move(params);
        ++device.stats.parameterWrites;
      }
      bindings.push_back(prepared.params[s].get());
    } else {
      // CPU segment code takes the sizes of its dynamic dimensions.
      pushConstants.assign(reinterpret_cast<const char *>(values.data()),
                           values.size() * sizeof(int64_t));
    }
    if (!queue.dispatch(*device.executable, prepared.kernels[s], groups,
                        bindings, pushConstants, error))
      return abandon();
    ++device.stats.dispatches;
  }
  RunnerDevice &logitsDevice = queueOf(program.buffers[logitsBuffer].device);
  bool ok = logitsDevice.queue->read(*prepared.buffers[logitsBuffer], 0,
                                     logits, logitBytes, error) &&
            finishAll(error);
  if (!ok)
    return abandon();
  staging_.clear();
  for (int device : prepared.distinctDevices)
    ++devices_[device].stats.steps;
  return true;
}

} // namespace hetrt::core
