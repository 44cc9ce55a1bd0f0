#include "runtime/format/ProgramJson.h"

#include "runtime/format/InputFile.h"

#include <nlohmann/json.hpp>

#include <map>

#include <algorithm>
#include <cstring>

namespace hetrt::format {

using hetc::abi::BufferRole;
using hetc::abi::Program;
using hetc::abi::ProgramBuffer;
using hetc::abi::ProgramStep;
using hetc::abi::ProgramValue;
using hetc::abi::StepKind;
using nlohmann::json;

namespace {

const char *const kRoleNames[] = {"tokens",   "positions",  "weight",
                                  "activation", "kv-cache", "rope-table",
                                  "logits", "weight-file",
                                  "streamed-weight", "block-table"};
const char *const kTargetNames[] = {"x86", "spirv", "nvptx", "amdgpu",
                                    "host-memory"};
constexpr size_t kMaxDevices = 16;

json valueToJson(const ProgramValue &value) {
  return json::array(
      {value.constant, value.perToken, value.perKey, value.divisor});
}

/// Coefficients past this are no program's: sizes stay far inside 64 bits
/// for any token and key count below 2^31.
constexpr int64_t kMaxCoefficient = int64_t(1) << 40;
constexpr size_t kMaxBuffers = 1 << 16;
constexpr int64_t kMaxKvBlockSize = 1 << 16;
constexpr int64_t kMaxKvRuns = 1 << 16;
constexpr size_t kMaxSteps = 1 << 20;
constexpr size_t kMaxListed = 64;

class Reader {
public:
  Reader(const std::string &origin, std::string &error)
      : origin_(origin), error_(error) {}

  bool fail(const std::string &field, const std::string &problem) {
    error_ = origin_ + ": field \"" + field + "\" " + problem +
             " (compile the model again with `hetc compile`)";
    return false;
  }

  bool value(const json &node, const std::string &field, ProgramValue &out) {
    if (!node.is_array() || node.size() != 4)
      return fail(field, "is not [constant, per token, per key, divisor]");
    int64_t parts[4];
    for (int i = 0; i < 4; ++i) {
      bool fits = node[i].is_number_integer() &&
                  (!node[i].is_number_unsigned() ||
                   node[i].get<uint64_t>() <= uint64_t(kMaxCoefficient));
      if (fits) {
        parts[i] = node[i].get<int64_t>();
        fits = parts[i] >= -kMaxCoefficient && parts[i] <= kMaxCoefficient;
      }
      if (!fits)
        return fail(field, "holds a value that is not a whole number within "
                           "±2^40");
    }
    if (parts[3] < 1)
      return fail(field, "has a divisor below 1");
    out = {parts[0], parts[1], parts[2], parts[3]};
    return true;
  }

  bool text(const json &object, const char *key, const std::string &field,
            std::string &out) {
    auto found = object.find(key);
    if (found == object.end() || !found->is_string())
      return fail(field + "." + key, "is missing or not a string");
    out = found->get<std::string>();
    if (out.size() > 256 || hasControlBytes(out))
      return fail(field + "." + key, "is longer than 256 bytes or holds a "
                                     "control character");
    return true;
  }

private:
  const std::string &origin_;
  std::string &error_;
};

} // namespace

std::string programToJson(const Program &program) {
  json buffers = json::array();
  for (const ProgramBuffer &buffer : program.buffers) {
    json entry = {{"name", buffer.name},
                  {"role", kRoleNames[static_cast<int>(buffer.role)]},
                  {"bytes", valueToJson(buffer.bytes)}};
    if (buffer.role == BufferRole::Weight)
      entry["weight"] = buffer.weight;
    if (buffer.role == BufferRole::KvCache)
      entry["runs"] = buffer.runs;
    entry["device"] = buffer.device;
    buffers.push_back(entry);
  }
  json steps = json::array();
  for (const ProgramStep &step : program.steps) {
    json entry = {{"buffers", step.buffers}, {"device", step.device}};
    if (step.kind == StepKind::Transfer) {
      entry["kind"] = "transfer";
      entry["bytes"] = valueToJson(step.params.at(0));
    } else if (step.kind == StepKind::Wait) {
      entry["kind"] = "wait";
      entry["transfer"] = step.transfer;
    } else if (step.kind == StepKind::RopeTable) {
      entry["kind"] = "rope-table";
      entry["theta"] = step.ropeTheta;
      entry["rotary_dim"] = step.rotaryDim;
      entry["head_dim"] = step.headDim;
      entry["position_scale"] = step.positionScale;
    } else {
      entry["kind"] = "dispatch";
      entry["kernel"] = step.kernel;
      json params = json::array();
      for (const ProgramValue &value : step.params)
        params.push_back(valueToJson(value));
      entry["params"] = params;
      entry["grid"] = json::array({valueToJson(step.grid[0]),
                                   valueToJson(step.grid[1]),
                                   valueToJson(step.grid[2])});
    }
    steps.push_back(entry);
  }
  json devices = json::array();
  for (const hetc::abi::ProgramDevice &device : program.devices)
    devices.push_back({{"name", device.name}, {"target", device.target}});
  return json({{"schema", "hetc.program/" +
                              std::to_string(hetc::abi::kProgramVersion)},
               {"devices", devices},
               {"kv_block_size", program.kvBlockSize},
               {"buffers", buffers},
               {"steps", steps}})
      .dump();
}

std::optional<Program> programFromJson(const std::string &text,
                                       const std::string &origin,
                                       std::string &error) {
  Reader read(origin, error);
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    error = origin + ": not a JSON object (compile the model again with "
                     "`hetc compile`)";
    return std::nullopt;
  }
  std::string schema =
      "hetc.program/" + std::to_string(hetc::abi::kProgramVersion);
  if (root.value("schema", json()) != schema) {
    read.fail("schema", "is not \"" + schema + "\"");
    return std::nullopt;
  }
  const json &buffers = root.value("buffers", json());
  const json &steps = root.value("steps", json());
  if (!buffers.is_array() || buffers.empty() || buffers.size() > kMaxBuffers) {
    read.fail("buffers", "is not a list of 1 to 65536 buffers");
    return std::nullopt;
  }
  if (!steps.is_array() || steps.empty() || steps.size() > kMaxSteps) {
    read.fail("steps", "is not a list of 1 to 2^20 steps");
    return std::nullopt;
  }
  const json &devices = root.value("devices", json());
  if (!devices.is_array() || devices.empty() || devices.size() > kMaxDevices) {
    read.fail("devices", "is not a list of 1 to 16 devices");
    return std::nullopt;
  }
  Program program;
  program.devices.clear();
  const json &blockSize = root.value("kv_block_size", json());
  if (!blockSize.is_number_integer() || blockSize.get<int64_t>() < 0 ||
      blockSize.get<int64_t>() > kMaxKvBlockSize) {
    read.fail("kv_block_size", "is not a block size of 0 to 65536 slots");
    return std::nullopt;
  }
  program.kvBlockSize = blockSize.get<int64_t>();
  for (size_t i = 0; i < devices.size(); ++i) {
    std::string field = "devices[" + std::to_string(i) + "]";
    hetc::abi::ProgramDevice device;
    if (!devices[i].is_object() ||
        !read.text(devices[i], "name", field, device.name) ||
        !read.text(devices[i], "target", field, device.target))
      return std::nullopt;
    if (std::find(std::begin(kTargetNames), std::end(kTargetNames),
                  device.target) == std::end(kTargetNames)) {
      read.fail(field + ".target", "is \"" + printable(device.target) +
                                       "\", not x86 or spirv");
      return std::nullopt;
    }
    if (device.name.empty() && devices.size() > 1) {
      read.fail(field + ".name", "is empty in a program of several devices");
      return std::nullopt;
    }
    for (const hetc::abi::ProgramDevice &earlier : program.devices)
      if (earlier.name == device.name) {
        read.fail(field + ".name", "names a device listed before");
        return std::nullopt;
      }
    program.devices.push_back(std::move(device));
  }
  auto deviceIndex = [&](const json &entry, const std::string &field,
                         int &out) {
    const json &index = entry.value("device", json());
    if (!index.is_number_integer() || index.get<int64_t>() < 0 ||
        index.get<int64_t>() >= static_cast<int64_t>(program.devices.size()))
      return read.fail(field + ".device", "names a device that is not in "
                                          "\"devices\"");
    out = index.get<int>();
    return true;
  };
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::string field = "buffers[" + std::to_string(i) + "]";
    const json &entry = buffers[i];
    ProgramBuffer buffer;
    std::string role;
    if (!entry.is_object() || !read.text(entry, "name", field, buffer.name) ||
        !read.text(entry, "role", field, role) ||
        !read.value(entry.value("bytes", json()), field + ".bytes",
                    buffer.bytes))
      return std::nullopt;
    int found = -1;
    for (int r = 0; r < static_cast<int>(std::size(kRoleNames)); ++r)
      if (role == kRoleNames[r])
        found = r;
    if (found < 0) {
      read.fail(field + ".role", "is \"" + printable(role) +
                                     "\", not a role this runtime knows");
      return std::nullopt;
    }
    buffer.role = static_cast<BufferRole>(found);
    if (!deviceIndex(entry, field, buffer.device))
      return std::nullopt;
    if (buffer.role == BufferRole::Weight &&
        !read.text(entry, "weight", field, buffer.weight))
      return std::nullopt;
    if (buffer.role == BufferRole::KvCache) {
      const json &runs = entry.value("runs", json());
      if (!runs.is_number_integer() || runs.get<int64_t>() < 1 ||
          runs.get<int64_t>() > kMaxKvRuns) {
        read.fail(field + ".runs", "is not 1 to 65536 runs of a block");
        return std::nullopt;
      }
      buffer.runs = runs.get<int64_t>();
    }
    if (buffer.role == BufferRole::BlockTable && program.kvBlockSize == 0) {
      read.fail(field + ".role", "is a block table, but \"kv_block_size\" "
                                 "is 0");
      return std::nullopt;
    }
    program.buffers.push_back(std::move(buffer));
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string field = "steps[" + std::to_string(i) + "]";
    const json &entry = steps[i];
    ProgramStep step;
    std::string kind;
    if (!entry.is_object() || !read.text(entry, "kind", field, kind) ||
        !deviceIndex(entry, field, step.device))
      return std::nullopt;
    const json &indices = entry.value("buffers", json());
    if (!indices.is_array() || indices.size() > kMaxListed) {
      read.fail(field + ".buffers", "is not a list of at most 64 buffers");
      return std::nullopt;
    }
    for (const json &index : indices) {
      if (!index.is_number_integer() || index.get<int64_t>() < 0 ||
          index.get<int64_t>() >= static_cast<int64_t>(program.buffers.size())) {
        read.fail(field + ".buffers", "names a buffer that does not exist");
        return std::nullopt;
      }
      step.buffers.push_back(index.get<int32_t>());
    }
    if (kind == "transfer") {
      step.kind = StepKind::Transfer;
      ProgramValue bytes;
      if (!read.value(entry.value("bytes", json()), field + ".bytes", bytes))
        return std::nullopt;
      if (step.buffers.size() != 2 || step.buffers[0] == step.buffers[1] ||
          program.buffers[step.buffers[1]].device != step.device) {
        read.fail(field, "is not a transfer from one buffer to another on "
                         "the step's device");
        return std::nullopt;
      }
      step.params.push_back(bytes);
    } else if (kind == "wait") {
      step.kind = StepKind::Wait;
      const json &transfer = entry.value("transfer", json());
      if (!step.buffers.empty() || !transfer.is_number_integer() ||
          transfer.get<int64_t>() < 0 ||
          transfer.get<int64_t>() >= static_cast<int64_t>(i)) {
        read.fail(field, "is not a wait, without buffers, for an earlier "
                         "step (\"transfer\": its index)");
        return std::nullopt;
      }
      step.transfer = transfer.get<int32_t>();
    } else if (kind == "rope-table") {
      step.kind = StepKind::RopeTable;
      const json &theta = entry.value("theta", json());
      const json &rotary = entry.value("rotary_dim", json());
      const json &head = entry.value("head_dim", json());
      const json &scale = entry.value("position_scale", json());
      if (!theta.is_number() || !rotary.is_number_integer() ||
          !head.is_number_integer() || !scale.is_number() ||
          !(theta.get<double>() >= 1 && theta.get<double>() <= 1e9) ||
          !(scale.get<double>() > 0 && scale.get<double>() <= 1e6) ||
          rotary.get<int64_t>() < 2 || rotary.get<int64_t>() % 2 != 0 ||
          head.get<int64_t>() < rotary.get<int64_t>() ||
          head.get<int64_t>() > 65536) {
        read.fail(field, "is not a RoPE table of a base in [1, 1e9], an even "
                         "rotary size within a head of at most 65536, and a "
                         "positive position scale");
        return std::nullopt;
      }
      step.ropeTheta = theta.get<float>();
      step.rotaryDim = rotary.get<int64_t>();
      step.headDim = head.get<int64_t>();
      step.positionScale = scale.get<float>();
    } else if (kind == "dispatch") {
      step.kind = StepKind::Dispatch;
      if (!read.text(entry, "kernel", field, step.kernel))
        return std::nullopt;
      const json &params = entry.value("params", json());
      const json &grid = entry.value("grid", json());
      if (!params.is_array() || params.size() > kMaxListed ||
          !grid.is_array() || grid.size() != 3) {
        read.fail(field, "has no list of at most 64 params and a grid of 3");
        return std::nullopt;
      }
      for (size_t p = 0; p < params.size(); ++p) {
        ProgramValue value;
        if (!read.value(params[p],
                        field + ".params[" + std::to_string(p) + "]", value))
          return std::nullopt;
        step.params.push_back(value);
      }
      for (int d = 0; d < 3; ++d)
        if (!read.value(grid[d], field + ".grid[" + std::to_string(d) + "]",
                        step.grid[d]))
          return std::nullopt;
    } else {
      read.fail(field + ".kind",
                "is \"" + printable(kind) +
                    "\", not dispatch, transfer, wait or rope-table");
      return std::nullopt;
    }
    program.steps.push_back(std::move(step));
  }
  std::string problem;
  if (!checkTransferWaits(program, problem)) {
    read.fail("steps", problem);
    return std::nullopt;
  }
  return program;
}

bool checkTransferWaits(const Program &program, std::string &problem) {
  // Targets of transfers between devices not yet waited for: buffer →
  // transfer step.
  std::map<int32_t, size_t> pending;
  auto crossesDevices = [&](const ProgramStep &step) {
    return step.kind == StepKind::Transfer && step.buffers.size() == 2 &&
           program.buffers[step.buffers[0]].device != step.device;
  };
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep &step = program.steps[s];
    std::string where = "step " + std::to_string(s);
    if (step.kind == StepKind::Wait) {
      size_t transfer = static_cast<size_t>(step.transfer);
      if (step.transfer < 0 || transfer >= s ||
          !crossesDevices(program.steps[transfer]) ||
          program.steps[transfer].device != step.device) {
        problem = where + " waits for step " + std::to_string(step.transfer) +
                  ", which is no earlier transfer from another device into "
                  "its device";
        return false;
      }
      pending.erase(program.steps[transfer].buffers[1]);
      continue;
    }
    for (int32_t buffer : step.buffers) {
      auto found = pending.find(buffer);
      if (found != pending.end()) {
        problem = where + " touches buffer \"" +
                  program.buffers[buffer].name + "\" before a wait for the "
                  "transfer into it (step " + std::to_string(found->second) +
                  ")";
        return false;
      }
    }
    if (crossesDevices(step))
      pending[step.buffers[1]] = s;
  }
  if (!pending.empty()) {
    problem = "the transfer of step " + std::to_string(pending.begin()->second) +
              " is never waited for";
    return false;
  }
  return true;
}

} // namespace hetrt::format
