#include "runtime/format/ProgramMemory.h"

#include <algorithm>
#include <set>

namespace hetrt::format {

using hetc::abi::BufferRole;
using hetc::abi::Program;
using hetc::abi::StepKind;

std::vector<DeviceHeldBytes> programHeldBytes(
    const std::vector<std::pair<const Program *, int64_t>> &programs) {
  std::vector<DeviceHeldBytes> held;
  auto deviceBytes = [&](const std::string &name) -> DeviceHeldBytes & {
    auto found = std::find_if(held.begin(), held.end(), [&](const auto &d) {
      return d.device == name;
    });
    if (found != held.end())
      return *found;
    held.push_back({name});
    return held.back();
  };
  std::set<std::pair<std::string, std::string>> sharedSeen;
  for (const auto &[program, maxTokens] : programs) {
    for (const hetc::abi::ProgramDevice &device : program->devices)
      deviceBytes(device.name);
    for (const hetc::abi::ProgramBuffer &buffer : program->buffers) {
      if (buffer.role == BufferRole::WeightFile || buffer.device < 0 ||
          static_cast<size_t>(buffer.device) >= program->devices.size())
        continue;
      const hetc::abi::ProgramDevice &device = program->devices[buffer.device];
      bool shared = buffer.role == BufferRole::Weight ||
                    buffer.role == BufferRole::KvCache ||
                    buffer.role == BufferRole::StreamedWeight;
      if (shared && !sharedSeen.insert({device.name, buffer.name}).second)
        continue;
      if (buffer.role == BufferRole::Weight &&
          readsWeightsInPlace(device.target))
        continue;
      uint64_t bytes = heldBufferBytes(buffer.bytes.at(maxTokens, 0));
      DeviceHeldBytes &into = deviceBytes(device.name);
      (buffer.role == BufferRole::Weight           ? into.weightBytes
       : buffer.role == BufferRole::KvCache        ? into.kvCacheBytes
       : buffer.role == BufferRole::StreamedWeight ? into.streamBufferBytes
                                                   : into.workBytes) += bytes;
    }
    for (const hetc::abi::ProgramStep &step : program->steps) {
      if (step.kind != StepKind::Dispatch || step.device < 0 ||
          static_cast<size_t>(step.device) >= program->devices.size())
        continue;
      const hetc::abi::ProgramDevice &device = program->devices[step.device];
      // Code compiled for a CPU segment takes its parameters as arguments.
      if (device.target == "x86")
        continue;
      deviceBytes(device.name).workBytes +=
          heldBufferBytes(static_cast<int64_t>(step.params.size()) * 4);
    }
  }
  return held;
}

} // namespace hetrt::format
