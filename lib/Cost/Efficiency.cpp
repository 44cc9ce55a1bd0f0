// Relative-efficiency tables (see Efficiency.h and docs/efficiency.md).
#include "hetc/Cost/Efficiency.h"

#include "runtime/format/InputFile.h"
#include "runtime/format/JsonText.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace hetc::cost {

namespace {

using nlohmann::json;

/// "ORIGIN: field "PATH": PROBLEM; fix: FIX", as the catalog words errors.
std::string fieldError(const std::string &origin, const std::string &field,
                       const std::string &problem, const std::string &fix) {
  return origin + ": field \"" + field + "\": " + problem + "; fix: " + fix;
}

std::optional<WorkloadModel> parseModel(const std::string &name) {
  if (name == "compute")
    return WorkloadModel::Compute;
  if (name == "stream_per_watt")
    return WorkloadModel::StreamPerWatt;
  if (name == "gather")
    return WorkloadModel::Gather;
  if (name == "peak_per_watt")
    return WorkloadModel::PeakPerWatt;
  return std::nullopt;
}

std::optional<hardware::DataType> parseDataType(const std::string &name) {
  for (int t = 0; t < hardware::kNumDataTypes; ++t) {
    auto type = static_cast<hardware::DataType>(t);
    if (name == hardware::dataTypeKey(type))
      return type;
  }
  return std::nullopt;
}

} // namespace

/// The string `key` of `object`, or "" when it is absent or not a string
/// (the checks after each read name the field and the fix).
/// The first member of `object` not in `known`, or empty: a misspelt field
/// would otherwise be silently ignored.
static std::string unknownField(const json &object,
                                std::initializer_list<const char *> known) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find_if(known.begin(), known.end(), [&](const char *name) {
          return it.key() == name;
        }) == known.end())
      return it.key();
  return {};
}

static std::string textOf(const json &object, const char *key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>()
                                                     : std::string();
}

std::optional<EfficiencyTable> loadEfficiencyTable(const std::string &path,
                                                   const std::string &catalogDir,
                                                   std::string &error) {
  std::optional<std::string> text = hetrt::format::readRegularFile(
      path, "an efficiency table", uint64_t(16) << 20, error);
  if (!text) {
    error += " (hetc ships hardware/workloads/relative-efficiency.json)";
    return std::nullopt;
  }
  std::string why;
  std::optional<json> parsed = hetrt::format::parseJsonText(*text, why);
  if (!parsed) {
    error = path + ": " + why;
    return std::nullopt;
  }
  json root = std::move(*parsed);
  if (!root.is_object()) {
    error = path + ": is not a JSON object; the efficiency table is one "
                   "object with \"schema\": \"hetc.efficiency/1\"";
    return std::nullopt;
  }
  if (textOf(root, "schema") != "hetc.efficiency/1") {
    error = fieldError(path, "schema", "is not \"hetc.efficiency/1\"",
                       "set it to \"hetc.efficiency/1\"");
    return std::nullopt;
  }
  if (std::string field = unknownField(
          root, {"schema", "source", "baseline", "devices", "workloads"});
      !field.empty()) {
    error = fieldError(path, field, "is not a known field",
                       "remove it or fix its spelling (schema, source, "
                       "baseline, devices, workloads)");
    return std::nullopt;
  }
  EfficiencyTable table;
  table.origin = path;
  table.source = textOf(root, "source");
  const json &devices = root["devices"];
  if (!devices.is_array() || devices.empty()) {
    error = fieldError(path, "devices", "is missing or empty",
                       "list the devices to compare");
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (size_t d = 0; d < devices.size(); ++d) {
    std::string field = "devices[" + std::to_string(d) + "]";
    const json &entry = devices[d];
    if (!entry.is_object() || !entry.contains("device") ||
        !entry["device"].is_string()) {
      error = fieldError(path, field + ".device", "is missing",
                         "name a catalog device, e.g. \"nvidia-h100-sxm\"");
      return std::nullopt;
    }
    if (std::string unknown = unknownField(entry, {"device", "host_link"});
        !unknown.empty()) {
      error = fieldError(path, field + "." + unknown, "is not a known field",
                         "remove it or fix its spelling (device, host_link)");
      return std::nullopt;
    }
    std::string name = entry["device"];
    std::optional<hardware::Device> device =
        hardware::findDevice(name, catalogDir, error);
    if (!device) {
      // A device file that exists but is broken names its own fix; only a
      // name found nowhere needs this one.
      bool namesAFix = error.find("fix:") != std::string::npos;
      error = namesAFix ? path + ": field \"" + field + ".device\": " + error
                        : fieldError(path, field + ".device", error,
                                     "name a device of the catalog");
      return std::nullopt;
    }
    EfficiencyDevice compared{*device, std::nullopt};
    if (entry.contains("host_link")) {
      if (!entry["host_link"].is_string()) {
        error = fieldError(path, field + ".host_link", "is not a string",
                           "name a catalog link, e.g. \"pcie5-x16\"");
        return std::nullopt;
      }
      std::optional<hardware::Link> link =
          hardware::findLink(entry["host_link"], catalogDir, error);
      if (!link) {
        error = fieldError(path, field + ".host_link", error,
                           "name a link of the catalog");
        return std::nullopt;
      }
      compared.hostLink = *link;
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      error = fieldError(path, field + ".device",
                         "\"" + name + "\" is listed twice",
                         "list each device once");
      return std::nullopt;
    }
    names.push_back(name);
    table.devices.push_back(std::move(compared));
  }
  std::string baseline = textOf(root, "baseline");
  auto found = std::find(names.begin(), names.end(), baseline);
  if (found == names.end()) {
    error = fieldError(path, "baseline", "\"" + baseline + "\" is not one of the devices",
                       "name one of the listed devices");
    return std::nullopt;
  }
  table.baseline = static_cast<int>(found - names.begin());

  const json &workloads = root["workloads"];
  if (!workloads.is_array() || workloads.empty()) {
    error = fieldError(path, "workloads", "is missing or empty",
                       "list the workloads to compare");
    return std::nullopt;
  }
  for (size_t w = 0; w < workloads.size(); ++w) {
    std::string field = "workloads[" + std::to_string(w) + "]";
    const json &entry = workloads[w];
    if (!entry.is_object()) {
      error = fieldError(path, field, "is not an object",
                         "give name, model, data_type and reference");
      return std::nullopt;
    }
    if (std::string unknown = unknownField(
            entry, {"name", "why", "model", "data_type", "bytes", "reference"});
        !unknown.empty()) {
      error = fieldError(path, field + "." + unknown, "is not a known field",
                         "remove it or fix its spelling (name, why, model, "
                         "data_type, bytes, reference)");
      return std::nullopt;
    }
    Workload workload;
    workload.name = textOf(entry, "name");
    workload.why = textOf(entry, "why");
    if (workload.name.empty()) {
      error = fieldError(path, field + ".name", "is missing", "name the workload");
      return std::nullopt;
    }
    // Names and notes are printed in tables: no terminal escape sequences.
    for (const char *key : {"name", "why"})
      if (hetrt::format::hasControlBytes(textOf(entry, key))) {
        error = fieldError(path, field + "." + key,
                           "holds a control character", "write plain text");
        return std::nullopt;
      }
    for (const Workload &earlier : table.workloads)
      if (earlier.name == workload.name) {
        error = fieldError(path, field + ".name",
                           "\"" + workload.name + "\" is listed twice",
                           "give each workload once");
        return std::nullopt;
      }
    std::optional<WorkloadModel> model = parseModel(textOf(entry, "model"));
    if (!model) {
      error = fieldError(path, field + ".model",
                         "is not compute, stream_per_watt, gather or peak_per_watt",
                         "use one of those");
      return std::nullopt;
    }
    workload.model = *model;
    if (*model == WorkloadModel::Compute || *model == WorkloadModel::PeakPerWatt) {
      std::optional<hardware::DataType> type =
          parseDataType(textOf(entry, "data_type"));
      if (!type) {
        error = fieldError(path, field + ".data_type",
                           "is not f32, f16, bf16, int8 or int4", "use one of those");
        return std::nullopt;
      }
      workload.dataType = *type;
    } else {
      const char *bytesFix = "give the bytes a step reads (stream_per_watt) "
                             "or the table's size (gather)";
      if (!entry.contains("bytes") || !entry["bytes"].is_number() ||
          !(entry["bytes"].get<double>() >= 1)) {
        error = fieldError(path, field + ".bytes", "is missing or not positive",
                           bytesFix);
        return std::nullopt;
      }
      if (!(entry["bytes"].get<double>() <= 1e18)) {
        error = fieldError(path, field + ".bytes",
                           "is " + hetrt::format::readableNumber(
                                       entry["bytes"].get<double>()) +
                               ", more than the 1e+18 bytes any workload reads",
                           bytesFix);
        return std::nullopt;
      }
      workload.bytes = entry["bytes"];
    }
    // find(), not operator[]: on a const object a missing key is undefined.
    auto referenceAt = entry.find("reference");
    static const json kMissing;
    const json &reference =
        referenceAt == entry.end() ? kMissing : *referenceAt;
    if (!reference.is_object()) {
      error = fieldError(path, field + ".reference", "is missing",
                         "give the reference table's figure per device (null: n/a)");
      return std::nullopt;
    }
    for (auto it = reference.begin(); it != reference.end(); ++it)
      if (std::find(names.begin(), names.end(), it.key()) == names.end()) {
        error = fieldError(path, field + ".reference." +
                                     hetrt::format::printable(it.key()),
                           "names a device that is not in \"devices\"",
                           "add the device to \"devices\", or remove its "
                           "figure");
        return std::nullopt;
      }
    for (const std::string &name : names) {
      if (!reference.contains(name)) {
        error = fieldError(path, field + ".reference." + name, "is missing",
                           "give the figure, or null where the table says n/a");
        return std::nullopt;
      }
      const json &value = reference[name];
      if (value.is_null())
        workload.reference.push_back(std::nullopt);
      // Relative figures: a million times the baseline is already absurd.
      else if (value.is_number() && value.get<double>() > 0 &&
               value.get<double>() <= 1e6)
        workload.reference.push_back(value.get<double>());
      else {
        error = fieldError(path, field + ".reference." + name,
                           "is not a positive number of at most 1e+06",
                           "give the table's relative figure, or null for n/a");
        return std::nullopt;
      }
    }
    table.workloads.push_back(std::move(workload));
  }
  return table;
}

std::optional<double> workloadFigure(const Workload &workload,
                                     const EfficiencyDevice &compared) {
  const hardware::Device &device = compared.device;
  if (device.memory.empty())
    return std::nullopt;
  const hardware::MemoryTier &home = device.memory.front();
  switch (workload.model) {
  case WorkloadModel::Compute: {
    double peak = device.peak(workload.dataType);
    if (workload.dataType == hardware::DataType::F16)
      peak = std::max(peak, device.peak(hardware::DataType::BF16));
    return peak > 0 ? std::optional<double>(peak) : std::nullopt;
  }
  case WorkloadModel::StreamPerWatt: {
    // Split over as many devices as the bytes need, each reading its share
    // of every step in turn: a step takes bytes / bandwidth, and all of them
    // draw power.
    double devices = std::ceil(workload.bytes /
                               static_cast<double>(home.capacityBytes));
    double stepsPerS = home.readGBPerS * 1e9 / workload.bytes;
    return stepsPerS / (devices * device.activeWatts);
  }
  case WorkloadModel::Gather: {
    for (const hardware::MemoryTier &tier : device.memory)
      if (static_cast<double>(tier.capacityBytes) >= workload.bytes &&
          tier.space != "disk")
        return tier.readGBPerS;
    if (compared.hostLink)
      return compared.hostLink->gbPerS;
    return std::nullopt;
  }
  case WorkloadModel::PeakPerWatt: {
    double peak = device.peak(workload.dataType);
    return peak > 0 ? std::optional<double>(peak / device.activeWatts)
                    : std::nullopt;
  }
  }
  return std::nullopt;
}

EfficiencyRow computeRow(const EfficiencyTable &table, const Workload &workload) {
  EfficiencyRow row;
  std::optional<double> base =
      workloadFigure(workload, table.devices[table.baseline]);
  for (const EfficiencyDevice &device : table.devices) {
    std::optional<double> figure = workloadFigure(workload, device);
    if (figure && base && *base > 0)
      row.relative.push_back(*figure / *base);
    else
      row.relative.push_back(std::nullopt);
  }
  // Pairs ranked the other way round, among devices both sides give a figure
  // for; a tie on either side disagrees with no strict order.
  for (size_t i = 0; i < row.relative.size(); ++i)
    for (size_t j = 0; j < row.relative.size(); ++j) {
      if (i == j || !row.relative[i] || !row.relative[j] ||
          !workload.reference[i] || !workload.reference[j])
        continue;
      if (*row.relative[i] > *row.relative[j] * (1 + 1e-9) &&
          *workload.reference[j] > *workload.reference[i])
        row.disagreements.emplace_back(static_cast<int>(i), static_cast<int>(j));
    }
  return row;
}

} // namespace hetc::cost
