#include "runtime/core/ProgramRunner.h"

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
  if (queue_) {
    hal::Error ignored;
    (void)queue_->finish(ignored);
  }
}

std::unique_ptr<ProgramRunner>
ProgramRunner::create(hal::Device &device, hal::ExecutableFormat format,
                      const std::string &binary,
                      const std::vector<hal::KernelSignature> &kernels,
                      std::vector<Entry> entries,
                      const format::GgufFile &weights, hal::Error &error) {
  std::unique_ptr<ProgramRunner> runner(new ProgramRunner(device));
  runner->executable_ = device.loadExecutable(format, binary, kernels, error);
  if (!runner->executable_)
    return nullptr;
  runner->queue_ = device.createQueue(error);
  if (!runner->queue_)
    return nullptr;
  for (size_t e = 0; e < entries.size(); ++e) {
    Prepared prepared;
    prepared.entry = std::move(entries[e]);
    const hetc::abi::Program &program = prepared.entry.program;
    std::string where = "program " + std::to_string(e);
    if (prepared.entry.maxTokens < 1)
      return fail(error, where + ": takes no tokens"), nullptr;
    if (program.devices.size() != 1 || program.devices[0].target != "spirv")
      return fail(error, where + ": runs on " +
                             std::to_string(program.devices.size()) +
                             " devices, not on one device through the SPIR-V "
                             "kernel library"),
             nullptr;
    for (const ProgramBuffer &buffer : program.buffers) {
      int64_t bytes = buffer.bytes.at(prepared.entry.maxTokens, 0);
      if (bytes <= 0 || bytes > kMaxBufferBytes)
        return fail(error, where + ": buffer \"" + buffer.name + "\" of " +
                               std::to_string(bytes) +
                               " bytes is outside 1 byte to 1 TiB"),
               nullptr;
      if (buffer.role == BufferRole::WeightFile)
        return fail(error, where + ": buffer \"" + buffer.name +
                               "\" maps the model file, which only code "
                               "compiled for a CPU reads"),
               nullptr;
      bool shared = buffer.role == BufferRole::Weight ||
                    buffer.role == BufferRole::KvCache;
      if (shared) {
        auto found = runner->shared_.find(buffer.name);
        if (found != runner->shared_.end()) {
          if (found->second->size() != paddedBytes(bytes))
            return fail(error, where + ": buffer \"" + buffer.name +
                                   "\" has another size than in an earlier "
                                   "program"),
                   nullptr;
          prepared.buffers.push_back(found->second);
          continue;
        }
      }
      std::shared_ptr<hal::Buffer> allocated =
          device.allocate(0, paddedBytes(bytes), error);
      if (!allocated)
        return nullptr;
      prepared.buffers.push_back(allocated);
      if (buffer.role == BufferRole::Logits)
        runner->vocab_ = bytes / 4;
      if (!shared)
        continue;
      runner->shared_[buffer.name] = allocated;
      if (buffer.role == BufferRole::KvCache) {
        if (!runner->queue_->fill(*allocated, 0, allocated->size(), 0, 4,
                                  error))
          return nullptr;
        continue;
      }
      const format::GgufTensorInfo *tensor = weights.findTensor(buffer.weight);
      if (!tensor)
        return fail(error, weights.path() + ": has no tensor \"" +
                               buffer.weight + "\", which " + where +
                               " reads; give the model the program was "
                               "compiled from"),
               nullptr;
      if (static_cast<int64_t>(tensor->sizeBytes) != bytes)
        return fail(error, weights.path() + ": tensor \"" + buffer.weight +
                               "\" holds " + std::to_string(tensor->sizeBytes) +
                               " bytes, but " + where + " reads " +
                               std::to_string(bytes) +
                               "; give the model the program was compiled "
                               "from"),
               nullptr;
      std::vector<char> staged(allocated->size(), 0);
      std::memcpy(staged.data(), weights.tensorData(*tensor), bytes);
      runner->staging_.push_back(std::move(staged));
      if (!runner->queue_->write(runner->staging_.back().data(), *allocated, 0,
                                 allocated->size(), error))
        return nullptr;
    }
    for (size_t s = 0; s < program.steps.size(); ++s) {
      const ProgramStep &step = program.steps[s];
      std::string stepWhere = where + ", step " + std::to_string(s);
      for (int32_t index : step.buffers)
        if (index < 0 || static_cast<size_t>(index) >= program.buffers.size())
          return fail(error, stepWhere + ": buffer " + std::to_string(index) +
                                 " does not exist"),
                 nullptr;
      if (step.kind == StepKind::Transfer)
        return fail(error, stepWhere + ": a transfer in a program of one "
                                       "device"),
               nullptr;
      if (step.kind == StepKind::RopeTable) {
        if (step.buffers.size() < 2 || step.buffers.size() > 3 ||
            program.buffers[step.buffers[0]].role != BufferRole::RopeTable ||
            program.buffers[step.buffers[1]].role != BufferRole::Positions ||
            step.rotaryDim < 2 || step.rotaryDim % 2 != 0 ||
            step.rotaryDim > step.headDim || !(step.ropeTheta > 0))
          return fail(error, stepWhere + ": a RoPE table step that is not "
                                         "(table, positions[, factors]) with "
                                         "an even rotary size within the "
                                         "head and a positive base"),
                 nullptr;
        if (step.buffers.size() == 3) {
          const ProgramBuffer &factors = program.buffers[step.buffers[2]];
          const format::GgufTensorInfo *tensor =
              weights.findTensor(factors.weight);
          if (!tensor || tensor->format != format::BlockFormat::F32 ||
              static_cast<int64_t>(tensor->sizeBytes) < step.rotaryDim / 2 * 4)
            return fail(error, stepWhere + ": the RoPE factors \"" +
                                   factors.weight +
                                   "\" are not f32 values, one per pair"),
                   nullptr;
          std::vector<float> values(step.rotaryDim / 2);
          std::memcpy(values.data(), weights.tensorData(*tensor),
                      values.size() * 4);
          runner->factors_[factors.weight] = std::move(values);
        }
        prepared.params.push_back(nullptr);
        prepared.kernels.push_back(-1);
        continue;
      }
      int kernel = runner->executable_->kernelIndex(step.kernel);
      if (kernel < 0)
        return fail(error, stepWhere + ": the kernel library has no kernel \"" +
                               step.kernel + "\""),
               nullptr;
      if (runner->executable_->kernels()[kernel].bindings !=
          static_cast<int>(step.buffers.size()) + 1)
        return fail(error, stepWhere + ": kernel \"" + step.kernel +
                               "\" takes " +
                               std::to_string(
                                   runner->executable_->kernels()[kernel]
                                       .bindings) +
                               " buffers, not " +
                               std::to_string(step.buffers.size() + 1)),
               nullptr;
      std::shared_ptr<hal::Buffer> params =
          device.allocate(0, paddedBytes(step.params.size() * 4), error);
      if (!params)
        return nullptr;
      prepared.params.push_back(params);
      prepared.kernels.push_back(kernel);
    }
    runner->prepared_.push_back(std::move(prepared));
  }
  if (!runner->queue_->finish(error))
    return nullptr;
  runner->staging_.clear();
  return runner;
}

bool ProgramRunner::run(size_t entry, const int32_t *tokens, int64_t count,
                        int64_t start, float *logits, hal::Error &error) {
  if (entry >= prepared_.size())
    return fail(error, "run: there is no program " + std::to_string(entry));
  Prepared &prepared = prepared_[entry];
  const hetc::abi::Program &program = prepared.entry.program;
  if (count < 1 || count > prepared.entry.maxTokens)
    return fail(error, "run: " + std::to_string(count) +
                           " tokens, but the program takes 1 to " +
                           std::to_string(prepared.entry.maxTokens));
  if (start < 0 || start > std::numeric_limits<int32_t>::max() - count)
    return fail(error, "run: position " + std::to_string(start) +
                           " is outside the 32-bit positions");
  int64_t keys = start + count;
  auto stage = [&](const void *bytes, size_t size) -> const char * {
    staging_.emplace_back(static_cast<const char *>(bytes),
                          static_cast<const char *>(bytes) + size);
    return staging_.back().data();
  };
  std::vector<int32_t> positions(count);
  for (int64_t t = 0; t < count; ++t)
    positions[t] = static_cast<int32_t>(start + t);
  int logitsBuffer = -1;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const ProgramBuffer &buffer = program.buffers[b];
    const void *source = nullptr;
    if (buffer.role == BufferRole::Tokens)
      source = tokens;
    else if (buffer.role == BufferRole::Positions)
      source = positions.data();
    else if (buffer.role == BufferRole::Logits)
      logitsBuffer = static_cast<int>(b);
    if (source &&
        !queue_->write(stage(source, count * 4), *prepared.buffers[b], 0,
                       count * 4, error))
      return false;
  }
  if (logitsBuffer < 0)
    return fail(error, "run: the program has no logits buffer");
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep &step = program.steps[s];
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
      if (!queue_->write(stage(table.data(), table.size() * 4),
                         *prepared.buffers[step.buffers[0]], 0,
                         table.size() * 4, error))
        return false;
      continue;
    }
    std::vector<int32_t> params(step.params.size());
    for (size_t p = 0; p < params.size(); ++p) {
      int64_t value = step.params[p].at(count, keys);
      if (value < std::numeric_limits<int32_t>::min() ||
          value > std::numeric_limits<int32_t>::max())
        return fail(error, "run: step " + std::to_string(s) + " (" +
                               step.kernel + "): parameter " +
                               std::to_string(p) + " is " +
                               std::to_string(value) + ", past 32 bits");
      params[p] = static_cast<int32_t>(value);
    }
    if (!params.empty() &&
        !queue_->write(stage(params.data(), params.size() * 4),
                       *prepared.params[s], 0, params.size() * 4, error))
      return false;
    uint32_t groups[3];
    for (int d = 0; d < 3; ++d) {
      int64_t value = step.grid[d].at(count, keys);
      if (value < 1 || value > 65535)
        return fail(error, "run: step " + std::to_string(s) + " (" +
                               step.kernel + ") needs " +
                               std::to_string(value) +
                               " workgroups along one axis; Vulkan devices "
                               "promise 1 to 65535");
      groups[d] = static_cast<uint32_t>(value);
    }
    std::vector<hal::Buffer *> bindings;
    for (int32_t index : step.buffers)
      bindings.push_back(prepared.buffers[index].get());
    bindings.push_back(prepared.params[s].get());
    if (!queue_->dispatch(*executable_, prepared.kernels[s], groups, bindings,
                          "", error))
      return false;
  }
  bool ok = queue_->read(*prepared.buffers[logitsBuffer], 0, logits,
                         vocab_ * 4, error) &&
            queue_->finish(error);
  staging_.clear();
  return ok;
}

} // namespace hetrt::core
