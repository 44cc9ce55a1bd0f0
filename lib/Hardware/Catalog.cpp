// Reading and validating the hardware catalog (see Catalog.h).
#include "hetc/Hardware/Catalog.h"

#include "runtime/format/ByteSize.h"

#include "runtime/core/Limits.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/JsonText.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>
#include <sys/stat.h>

namespace hetc::hardware {

using nlohmann::json;

const char *dataTypeKey(DataType type) {
  switch (type) {
  case DataType::F32:
    return "f32";
  case DataType::F16:
    return "f16";
  case DataType::BF16:
    return "bf16";
  case DataType::Int8:
    return "int8";
  case DataType::Int4:
    return "int4";
  }
  return "?";
}

const char *deviceKindName(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::Cpu:
    return "cpu";
  case DeviceKind::Cuda:
    return "cuda";
  case DeviceKind::Hip:
    return "hip";
  case DeviceKind::Spirv:
    return "spirv";
  }
  return "?";
}

const MemoryTier *Device::tier(const std::string &tierName) const {
  for (const MemoryTier &t : memory)
    if (t.name == tierName)
      return &t;
  return nullptr;
}

int System::deviceIndex(const std::string &id) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].id == id)
      return static_cast<int>(i);
  return -1;
}

namespace {

/// The largest number any field of a hardware file may hold.
constexpr double kLargestPlausible = 1e9;
/// The smallest a field that must be positive (a rate, a power) may hold.
constexpr double kSmallestPlausible = 1e-6;

std::string describe(const json &value) {
  std::string text = value.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

/// Reads typed fields out of JSON objects, keeping the first problem as a
/// message that names the file, the field's path and the fix.
class Checker {
public:
  explicit Checker(std::string origin) : origin_(std::move(origin)) {}

  bool ok() const { return error_.empty(); }
  const std::string &error() const { return error_; }

  void fail(const std::string &path, const std::string &problem,
            const std::string &fix) {
    if (error_.empty())
      error_ = origin_ + ": field \"" + path + "\": " + problem + "; fix: " + fix;
  }
  void failWhole(const std::string &problem) {
    if (error_.empty())
      error_ = origin_ + ": " + problem;
  }

  static std::string join(const std::string &path, const std::string &key) {
    return path.empty() ? key : path + "." + key;
  }

  /// The member `key` of `object`, or null (recorded as an error when
  /// `required`).
  const json *member(const json &object, const std::string &path,
                     const char *key, bool required, const std::string &fix) {
    auto found = object.find(key);
    if (found == object.end()) {
      if (required)
        fail(join(path, key), "is missing", fix);
      return nullptr;
    }
    return &*found;
  }

  std::string string(const json &object, const std::string &path,
                     const char *key, const std::string &fix,
                     bool required = true) {
    const json *value = member(object, path, key, required, fix);
    if (!value)
      return {};
    if (!value->is_string() || value->get<std::string>().empty()) {
      fail(join(path, key),
           "expected a non-empty string, got " + describe(*value), fix);
      return {};
    }
    // Names are printed in plans, tables and errors; free text may hold
    // line breaks.
    const std::string &text = value->get_ref<const std::string &>();
    bool freeText = std::string_view(key) == "description" ||
                    std::string_view(key) == "source";
    if (!freeText && hetrt::format::hasControlBytes(text)) {
      fail(join(path, key),
           "\"" + hetrt::format::printable(text) +
               "\" contains a control character",
           "remove it");
      return {};
    }
    return text;
  }

  double number(const json &object, const std::string &path, const char *key,
                bool allowZero, const std::string &fix, bool required = true,
                double fallback = 0) {
    const json *value = member(object, path, key, required, fix);
    if (!value)
      return fallback;
    if (!value->is_number() || (value->get<double>() < 0) ||
        (!allowZero && value->get<double>() == 0)) {
      fail(join(path, key),
           std::string("expected a ") + (allowZero ? "non-negative" : "positive") +
               " number, got " + describe(*value),
           fix);
      return fallback;
    }
    // No rate, price, power or latency of real hardware comes near this; a
    // larger value is a typo that would print hundreds of digits.
    if (value->get<double>() != 0 &&
        value->get<double>() < kSmallestPlausible) {
      fail(join(path, key),
           "is " + describe(*value) + ", too small for any real hardware (at "
               "least 1e-6 in the field's unit)",
           fix);
      return fallback;
    }
    if (!std::isfinite(value->get<double>()) ||
        value->get<double>() > kLargestPlausible) {
      fail(join(path, key),
           "is " + describe(*value) + ", beyond any real hardware (at most " +
               "1e9 in the field's unit)",
           fix);
      return fallback;
    }
    return value->get<double>();
  }

  uint64_t bytes(const json &object, const std::string &path, const char *key,
                 const std::string &fix) {
    const json *value = member(object, path, key, true, fix);
    if (!value)
      return 0;
    if (!value->is_number_unsigned() || value->get<uint64_t>() == 0) {
      fail(join(path, key),
           "expected a positive whole number of bytes, got " + describe(*value),
           fix);
      return 0;
    }
    // A pebibyte is past any memory, pool or disk tier one device holds, and
    // keeps sums of capacities far inside 64 bits.
    constexpr uint64_t kLargestCapacity = uint64_t(1) << 50;
    if (value->get<uint64_t>() > kLargestCapacity) {
      fail(join(path, key),
           "is " + describe(*value) + " bytes, beyond any real memory (at "
           "most 1 PiB = 1125899906842624)",
           fix);
      return 0;
    }
    return value->get<uint64_t>();
  }

  /// Rejects members not in `known` (a misspelt field would otherwise be
  /// silently ignored).
  void onlyKnown(const json &object, const std::string &path,
                 std::initializer_list<const char *> known) {
    std::set<std::string> names(known.begin(), known.end());
    for (auto it = object.begin(); it != object.end(); ++it)
      if (!names.count(it.key())) {
        std::string list;
        for (const char *name : known)
          list += (list.empty() ? "" : ", ") + std::string(name);
        fail(join(path, it.key()), "is not a known field",
             "remove it or use one of: " + list);
        return;
      }
    // Sources are documentation, but of a known shape.
    auto sources = object.find("sources");
    if (names.count("sources") && sources != object.end() &&
        !sources->is_array())
      fail(join(path, "sources"),
           "expected an array of sources, got " + describe(*sources),
           "list objects with field, kind, source and url");
  }

  bool schema(const json &object, const char *expected) {
    if (!object.is_object()) {
      failWhole("expected a JSON object at the top level");
      return false;
    }
    std::string found = string(object, "", "schema",
                               std::string("set \"schema\": \"") + expected + "\"");
    if (ok() && found != expected)
      fail("schema", "is \"" + found + "\", not \"" + expected + "\"",
           std::string("this reader understands \"") + expected +
               "\"; check the file is the right kind");
    return ok();
  }

private:
  std::string origin_;
  std::string error_;
};

std::optional<json> parseJson(const std::string &text, Checker &check) {
  std::string why;
  std::optional<json> value = hetrt::format::parseJsonText(text, why);
  if (!value)
    check.failWhole(why + " (check for a missing comma, quote or brace)");
  return value;
}

std::optional<Device> readDevice(const json &object, const std::string &path,
                                 Checker &check) {
  if (!object.is_object()) {
    check.fail(path.empty() ? "device" : path,
               "expected a device object, got " + describe(object),
               "write a hetc.device/1 object or a catalog device name");
    return std::nullopt;
  }
  Device device;
  check.onlyKnown(object, path,
                  {"schema", "name", "description", "kind", "arch",
                   "peak_tflops", "memory", "launch_overhead_us", "power_w",
                   "price_usd_per_hour", "workload_efficiency", "calibration",
                   "sources"});
  device.name = check.string(object, path, "name",
                             "name the device (the file name without .json)");
  device.description = check.string(object, path, "description",
                                    "describe the product", /*required=*/false);
  std::string kind = check.string(object, path, "kind",
                                  "one of cpu, cuda, hip, spirv");
  if (kind == "cpu")
    device.kind = DeviceKind::Cpu;
  else if (kind == "cuda")
    device.kind = DeviceKind::Cuda;
  else if (kind == "hip")
    device.kind = DeviceKind::Hip;
  else if (kind == "spirv")
    device.kind = DeviceKind::Spirv;
  else if (check.ok())
    check.fail(Checker::join(path, "kind"), "\"" + kind + "\" is not a device kind",
               "use one of cpu, cuda, hip, spirv");
  device.arch = check.string(object, path, "arch",
                             "give the architecture (sm_90, gfx942, znver4, ...)");

  std::string peakPath = Checker::join(path, "peak_tflops");
  if (const json *peak = check.member(object, path, "peak_tflops", true,
                                      "give dense peak TFLOPS/TOPS per type")) {
    if (!peak->is_object()) {
      check.fail(peakPath, "expected an object of f32, f16, bf16, int8, int4",
                 "write e.g. {\"f32\": 67, \"f16\": 989.5, ...}");
    } else {
      check.onlyKnown(*peak, peakPath, {"f32", "f16", "bf16", "int8", "int4"});
      for (int i = 0; i < kNumDataTypes; ++i) {
        const char *key = dataTypeKey(static_cast<DataType>(i));
        // int4 may be left out (0: no native support).
        device.peakTflops[i] = check.number(
            *peak, peakPath, key, /*allowZero=*/true,
            std::string("give the dense peak for ") + key +
                " in 10^12 operations/s (0 if unsupported)",
            /*required=*/static_cast<DataType>(i) != DataType::Int4);
      }
      bool any = false;
      for (double value : device.peakTflops)
        any |= value > 0;
      if (check.ok() && !any)
        check.fail(peakPath, "every peak is 0",
                   "give at least one data type's throughput");
    }
  }

  std::string memoryPath = Checker::join(path, "memory");
  const json *memory = check.member(object, path, "memory", true,
                                    "list the memory tiers, fastest first");
  if (memory && (!memory->is_array() || memory->empty()))
    check.fail(memoryPath, "expected a non-empty array of tiers",
               "list at least the device's own memory");
  else if (memory) {
    std::set<std::string> names;
    for (size_t i = 0; i < memory->size() && check.ok(); ++i) {
      const json &entry = (*memory)[i];
      std::string tierPath = memoryPath + "[" + std::to_string(i) + "]";
      if (!entry.is_object()) {
        check.fail(tierPath, "expected a tier object, got " + describe(entry),
                   "write {\"name\", \"capacity_bytes\", \"read_gb_per_s\", "
                   "\"latency_ns\"}");
        break;
      }
      check.onlyKnown(entry, tierPath,
                      {"name", "space", "capacity_bytes", "read_gb_per_s",
                       "latency_ns"});
      MemoryTier tier;
      tier.name = check.string(entry, tierPath, "name", "name the tier (hbm3, ddr5, ...)");
      tier.space = check.string(entry, tierPath, "space",
                                "one of hbm, dram, cxl, disk", /*required=*/false);
      if (check.ok() && !tier.space.empty() && tier.space != "hbm" &&
          tier.space != "dram" && tier.space != "cxl" && tier.space != "disk")
        check.fail(tierPath + ".space", "\"" + tier.space + "\" is not a memory space",
                   "use one of hbm, dram, cxl, disk");
      tier.capacityBytes = check.bytes(entry, tierPath, "capacity_bytes",
                                       "give the capacity in bytes (80 GiB = 85899345920)");
      tier.readGBPerS = check.number(entry, tierPath, "read_gb_per_s", false,
                                     "give the peak read bandwidth in GB/s (10^9 bytes/s)");
      tier.latencyNs = check.number(entry, tierPath, "latency_ns", true,
                                    "give the load-to-use latency in ns");
      if (check.ok() && !names.insert(tier.name).second)
        check.fail(tierPath + ".name", "\"" + tier.name + "\" names two tiers",
                   "give each tier of a device its own name");
      device.memory.push_back(tier);
    }
  }

  device.launchOverheadUs = check.number(object, path, "launch_overhead_us", true,
                                         "give the cost of one kernel launch in µs");
  std::string powerPath = Checker::join(path, "power_w");
  if (const json *power = check.member(object, path, "power_w", true,
                                       "give {\"idle\": W, \"active\": W}")) {
    if (!power->is_object()) {
      check.fail(powerPath, "expected {\"idle\": W, \"active\": W}, got " + describe(*power),
                 "give idle and active power in watts");
    } else {
      check.onlyKnown(*power, powerPath, {"idle", "active"});
      device.idleWatts = check.number(*power, powerPath, "idle", true,
                                      "give the idle power in W");
      device.activeWatts = check.number(*power, powerPath, "active", false,
                                        "give the active power (TDP) in W");
      if (check.ok() && device.idleWatts > device.activeWatts)
        check.fail(powerPath + ".idle", "is above power_w.active",
                   "idle power cannot exceed active power");
    }
  }
  device.priceUsdPerHour = check.number(object, path, "price_usd_per_hour", true,
                                        "give a price in USD per hour (0: billed with another device)");
  std::string calibrationPath = Checker::join(path, "calibration");
  if (const json *calibration = check.member(object, path, "calibration", false, "")) {
    Calibration measured;
    if (!calibration->is_object())
      check.fail(calibrationPath, "expected an object, got " + describe(*calibration),
                 "let `hetc calibrate` write it");
    else {
      check.onlyKnown(*calibration, calibrationPath,
                      {"decode_gb_per_s", "prefill_tflops", "dispatch_us", "threads",
                       "sample_us", "sample_ns_per_logit",
                       "attention_gflops", "prefill_tflops_by_width",
                       "decode_gb_per_s_by_width", "read_gb_per_s_by_mib",
                       "decode_in_cache_gb_per_s"});
      for (auto [key, target] :
           {std::pair{"decode_gb_per_s", &measured.decodeGBPerS},
            std::pair{"prefill_tflops", &measured.prefillTflops}}) {
        std::string mapPath = Checker::join(calibrationPath, key);
        const json *rates = check.member(*calibration, calibrationPath, key, true,
                                         "give a rate per weight format");
        if (!rates)
          break;
        if (!rates->is_object()) {
          check.fail(mapPath, "expected {\"<format>\": rate}", "let `hetc calibrate` write it");
          break;
        }
        for (auto it = rates->begin(); it != rates->end(); ++it)
          (*target)[it.key()] = check.number(*rates, mapPath, it.key().c_str(), false,
                                             "give a positive measured rate");
      }
      measured.dispatchUs = check.number(*calibration, calibrationPath, "dispatch_us",
                                         true, "give the measured dispatch cost in µs");
      measured.threads = static_cast<int>(check.number(
          *calibration, calibrationPath, "threads", false,
          "give the thread count of the measurement"));
      // Optional: calibrations written before the sampler was measured.
      measured.sampleUs = check.number(*calibration, calibrationPath, "sample_us", true,
                                       "give the measured fixed cost of sampling a "
                                       "token in µs",
                                       /*required=*/false);
      measured.sampleNsPerLogit = check.number(
          *calibration, calibrationPath, "sample_ns_per_logit", true,
          "give the measured sampling cost per vocabulary entry in ns",
          /*required=*/false);
      // {"<size>": rate} objects: each key a positive whole number.
      auto readBySize = [&](const json &rates, const std::string &path,
                            std::map<int64_t, double> &into, const char *notSize,
                            const char *keyFix, const char *rateFix) {
        for (auto it = rates.begin(); it != rates.end(); ++it) {
          char *end = nullptr;
          long long size = std::strtoll(it.key().c_str(), &end, 10);
          if (it.key().empty() || *end != '\0' || size <= 0) {
            check.fail(Checker::join(path, it.key().c_str()), notSize, keyFix);
            continue;
          }
          into[size] = check.number(rates, path, it.key().c_str(), false, rateFix);
        }
      };
      // An optional member that must be an object shaped like `shape`:
      // null when it is absent or (reported) not an object.
      auto optionalObject = [&](const char *key, const std::string &shape) -> const json * {
        const json *member = check.member(*calibration, calibrationPath, key, false, "");
        if (member && !member->is_object()) {
          check.fail(Checker::join(calibrationPath, key),
                     "expected " + shape + ", got " + describe(*member),
                     "let `hetc calibrate` write it");
          return nullptr;
        }
        return member;
      };
      if (const json *rates =
              optionalObject("attention_gflops", "{\"<head size>\": GFLOP/s}"))
        readBySize(*rates, Checker::join(calibrationPath, "attention_gflops"),
                   measured.attentionGflops, "is not a head size",
                   "key each rate by the head size it was measured at",
                   "give a positive measured rate in GFLOP/s");
      if (const json *rates =
              optionalObject("read_gb_per_s_by_mib", "{\"<MiB>\": GB/s}"))
        readBySize(*rates, Checker::join(calibrationPath, "read_gb_per_s_by_mib"),
                   measured.readGBPerSByMiB, "is not a buffer size in MiB",
                   "key each rate by the buffer size it was measured at, in MiB",
                   "give a positive measured rate in GB/s");
      if (const json *rates =
              optionalObject("decode_in_cache_gb_per_s", "{\"<format>\": GB/s}")) {
        std::string inCachePath = Checker::join(calibrationPath, "decode_in_cache_gb_per_s");
        for (auto it = rates->begin(); it != rates->end(); ++it)
          measured.decodeInCacheGBPerS[it.key()] =
              check.number(*rates, inCachePath, it.key().c_str(), false,
                           "give a positive measured rate in GB/s");
      }
      // Optional: {"<format>": {"<width>": rate}}.
      for (auto [key, unit, target] :
           {std::tuple{"prefill_tflops_by_width", "TFLOP/s",
                       &measured.prefillTflopsByWidth},
            std::tuple{"decode_gb_per_s_by_width", "GB/s",
                       &measured.decodeGBPerSByWidth}}) {
        std::string widthPath = Checker::join(calibrationPath, key);
        std::string shape = std::string("{\"<width>\": ") + unit + "}";
        const json *formats = optionalObject(key, "{\"<format>\": " + shape + "}");
        if (!formats)
          continue;
        std::string rateFix = std::string("give a positive measured rate in ") + unit;
        for (auto format = formats->begin(); format != formats->end(); ++format) {
          std::string formatPath = Checker::join(widthPath, format.key().c_str());
          if (!format->is_object()) {
            check.fail(formatPath, "expected " + shape + ", got " + describe(*format),
                       "let `hetc calibrate` write it");
            continue;
          }
          readBySize(*format, formatPath, (*target)[format.key()],
                     "is not a model width",
                     "key each rate by the hidden size it was measured at",
                     rateFix.c_str());
        }
      }
      device.calibration = measured;
    }
  }
  if (!check.ok())
    return std::nullopt;
  return device;
}

std::optional<Link> readLink(const json &object, const std::string &path,
                             Checker &check) {
  if (!object.is_object()) {
    check.fail(path.empty() ? "link" : path,
               "expected a link object, got " + describe(object),
               "write a hetc.link/1 object or a catalog link name");
    return std::nullopt;
  }
  check.onlyKnown(object, path,
                  {"schema", "name", "description", "gb_per_s", "latency_us",
                   "bidirectional", "sources"});
  Link link;
  link.name = check.string(object, path, "name", "name the link (the file name without .json)");
  link.description = check.string(object, path, "description", "describe the link",
                                  /*required=*/false);
  link.gbPerS = check.number(object, path, "gb_per_s", false,
                             "give the usable bandwidth per direction in GB/s");
  link.latencyUs = check.number(object, path, "latency_us", true,
                                "give the transfer latency in µs");
  if (const json *bidirectional = check.member(object, path, "bidirectional",
                                               false, "")) {
    if (!bidirectional->is_boolean())
      check.fail(Checker::join(path, "bidirectional"),
                 "expected true or false, got " + describe(*bidirectional),
                 "say whether both directions run at full rate at once");
    else
      link.bidirectional = bidirectional->get<bool>();
  }
  if (!check.ok())
    return std::nullopt;
  return link;
}

bool readFile(const std::string &path, std::string &text, std::string &error) {
  // A FIFO or a directory is refused at once; a catalog file is small.
  std::optional<std::string> contents = hetrt::format::readRegularFile(
      path, "a hardware JSON file", uint64_t(16) << 20, error);
  if (!contents)
    return false;
  text = std::move(*contents);
  return true;
}

bool exists(const std::string &path) {
  struct stat info;
  // Anything that exists is read as a file, so a FIFO or a directory gets
  // the reader's error instead of being looked up as a catalog name.
  return ::stat(path.c_str(), &info) == 0;
}

/// A device or link given by catalog name or inline object.
template <typename T, typename Load, typename Read>
std::optional<T> resolve(const json &value, const std::string &path,
                         const std::string &catalogDir, const char *folder,
                         Checker &check, Load load, Read read) {
  if (value.is_string()) {
    // A catalog name is a file name in the catalog, never a path out of it.
    const std::string &name = value.get_ref<const std::string &>();
    if (name.empty() || name[0] == '.' ||
        !std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                 c == '_' || c == '-' || c == '+';
        })) {
      check.fail(path,
                 "\"" + hetrt::format::printable(name) +
                     "\" is not a catalog name (letters, digits, '.', '_', "
                     "'-' and '+', not starting with '.')",
                 std::string("use a name from the catalog's ") + folder +
                     "/ or write the object inline");
      return std::nullopt;
    }
    std::string file = catalogDir + "/" + folder + "/" + name + ".json";
    if (!exists(file)) {
      check.fail(path, "\"" + value.get<std::string>() + "\" is not in the catalog (" +
                           file + " does not exist)",
                 std::string("use a name from the catalog's ") + folder +
                     "/ or write the object inline");
      return std::nullopt;
    }
    std::string error;
    std::optional<T> loaded = load(file, error);
    if (!loaded)
      check.failWhole("via field \"" + path + "\": " + error);
    return loaded;
  }
  return read(value, path, check);
}

} // namespace

std::optional<Device> parseDevice(const std::string &text,
                                  const std::string &origin,
                                  std::string &error) {
  Checker check(origin);
  std::optional<json> value = parseJson(text, check);
  std::optional<Device> device;
  if (value && check.schema(*value, "hetc.device/1"))
    device = readDevice(*value, "", check);
  if (!check.ok()) {
    error = check.error();
    return std::nullopt;
  }
  return device;
}

std::optional<Link> parseLink(const std::string &text,
                              const std::string &origin, std::string &error) {
  Checker check(origin);
  std::optional<json> value = parseJson(text, check);
  std::optional<Link> link;
  if (value && check.schema(*value, "hetc.link/1"))
    link = readLink(*value, "", check);
  if (!check.ok()) {
    error = check.error();
    return std::nullopt;
  }
  return link;
}

std::optional<System> parseSystem(const std::string &text,
                                  const std::string &origin,
                                  const std::string &catalogDir,
                                  std::string &error) {
  Checker check(origin);
  std::optional<json> value = parseJson(text, check);
  System system;
  if (value && check.schema(*value, "hetc.system/1")) {
    const json &object = *value;
    check.onlyKnown(object, "",
                    {"schema", "name", "description", "devices", "links", "sources"});
    system.name = check.string(object, "", "name", "name the system");
    system.description = check.string(object, "", "description",
                                      "describe the system", /*required=*/false);
    const json *devices = check.member(object, "", "devices", true,
                                       "list the devices: [{\"id\", \"device\"}]");
    if (devices && (!devices->is_array() || devices->empty()))
      check.fail("devices", "expected a non-empty array",
                 "list at least one {\"id\": ..., \"device\": ...}");
    // The planner's work grows with the square of the devices; far past any
    // machine a model runs on.
    constexpr size_t kMaxDevices = 256;
    if (devices && devices->is_array() && devices->size() > kMaxDevices)
      check.fail("devices",
                 "lists " + std::to_string(devices->size()) +
                     " devices, more than the " + std::to_string(kMaxDevices) +
                     " hetc plans over",
                 "describe one machine (or one node of a cluster)");
    for (size_t i = 0; devices && devices->is_array() && i < devices->size() &&
                       check.ok();
         ++i) {
      const json &entry = (*devices)[i];
      std::string path = "devices[" + std::to_string(i) + "]";
      if (!entry.is_object()) {
        check.fail(path, "expected {\"id\", \"device\"}, got " + describe(entry),
                   "give an id and a catalog device name or object");
        break;
      }
      check.onlyKnown(entry, path, {"id", "device"});
      std::string id = check.string(entry, path, "id", "give the device an id (gpu0, cpu0)");
      const json *device = check.member(entry, path, "device", true,
                                        "name a catalog device or write one inline");
      if (!check.ok())
        break;
      if (system.deviceIndex(id) >= 0) {
        check.fail(path + ".id", "\"" + id + "\" is used twice",
                   "give every device its own id");
        break;
      }
      std::optional<Device> resolved = resolve<Device>(
          *device, path + ".device", catalogDir, "devices", check, loadDevice,
          readDevice);
      if (resolved)
        system.devices.push_back({id, *resolved});
    }
    const json *links = check.member(object, "", "links", false, "");
    if (links && !links->is_array())
      check.fail("links", "expected an array of {\"from\", \"to\", \"link\"}",
                 "write [] for a system without links");
    for (size_t i = 0; links && links->is_array() && i < links->size() &&
                       check.ok();
         ++i) {
      const json &entry = (*links)[i];
      std::string path = "links[" + std::to_string(i) + "]";
      if (!entry.is_object()) {
        check.fail(path, "expected {\"from\", \"to\", \"link\"}, got " + describe(entry),
                   "connect two memories \"<device id>.<tier>\"");
        break;
      }
      check.onlyKnown(entry, path, {"from", "to", "link"});
      SystemLink systemLink;
      bool endpointsOk = true;
      for (const char *end : {"from", "to"}) {
        std::string endpoint = check.string(entry, path, end,
                                            "write \"<device id>.<tier name>\"");
        if (!check.ok()) {
          endpointsOk = false;
          break;
        }
        size_t dot = endpoint.find('.');
        int device = dot == std::string::npos
                         ? -1
                         : system.deviceIndex(endpoint.substr(0, dot));
        int tier = -1;
        if (device >= 0) {
          const std::vector<MemoryTier> &tiers =
              system.devices[device].device.memory;
          for (size_t t = 0; t < tiers.size(); ++t)
            if (tiers[t].name == endpoint.substr(dot + 1))
              tier = static_cast<int>(t);
        }
        if (device < 0 || tier < 0) {
          check.fail(path + "." + end,
                     "\"" + endpoint + "\" is not a memory of this system",
                     "write \"<device id>.<tier name>\" with an id from "
                     "\"devices\" and a tier of that device");
          endpointsOk = false;
          break;
        }
        (std::string(end) == "from" ? systemLink.from : systemLink.to) = {device, tier};
      }
      if (!endpointsOk)
        break;
      if (systemLink.from.device == systemLink.to.device &&
          systemLink.from.tier == systemLink.to.tier) {
        check.fail(path, "links a memory to itself",
                   "connect two different memories");
        break;
      }
      bool twice = false;
      for (const SystemLink &earlier : system.links)
        twice = twice || (earlier.from.device == systemLink.from.device &&
                          earlier.from.tier == systemLink.from.tier &&
                          earlier.to.device == systemLink.to.device &&
                          earlier.to.tier == systemLink.to.tier);
      if (twice) {
        check.fail(path, "connects the same two memories as an earlier link",
                   "give each link once");
        break;
      }
      const json *link = check.member(entry, path, "link", true,
                                      "name a catalog link or write one inline");
      if (!link)
        break;
      std::optional<Link> resolved = resolve<Link>(
          *link, path + ".link", catalogDir, "links", check, loadLink, readLink);
      if (!resolved)
        break;
      systemLink.link = *resolved;
      system.links.push_back(systemLink);
    }
  }
  if (!check.ok()) {
    error = check.error();
    return std::nullopt;
  }
  return system;
}

std::optional<Device> loadDevice(const std::string &path, std::string &error) {
  std::string text;
  if (!readFile(path, text, error))
    return std::nullopt;
  return parseDevice(text, path, error);
}

std::optional<Link> loadLink(const std::string &path, std::string &error) {
  std::string text;
  if (!readFile(path, text, error))
    return std::nullopt;
  return parseLink(text, path, error);
}

std::optional<System> loadSystem(const std::string &path,
                                 const std::string &catalogDir,
                                 std::string &error) {
  std::string text;
  if (!readFile(path, text, error))
    return std::nullopt;
  return parseSystem(text, path, catalogDir, error);
}

std::optional<System> findSystem(const std::string &nameOrPath,
                                 const std::string &catalogDir,
                                 std::string &error) {
  if (exists(nameOrPath))
    return loadSystem(nameOrPath, catalogDir, error);
  std::string systems = catalogDir + "/systems";
  struct stat info;
  if (stat(systems.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = "--catalog " + catalogDir + ": has no systems/ directory, so it "
            "is not a hardware catalog (give the repository's hardware/ "
            "directory or one laid out like it), and " + nameOrPath +
            " is no system file";
    return std::nullopt;
  }
  std::string file = catalogDir + "/systems/" + nameOrPath + ".json";
  if (nameOrPath.find('/') == std::string::npos && exists(file))
    return loadSystem(file, catalogDir, error);
  error = nameOrPath + ": no such system file, and not a system of the catalog "
                       "in " + catalogDir + "/systems (give a path, a catalog "
                       "name, or write one with `hetc calibrate`)";
  return std::nullopt;
}

namespace {
/// `nameOrPath` as a file, else as `catalogDir/KIND/NAME.json`.
template <typename T, typename Load>
std::optional<T> findEntry(const std::string &nameOrPath,
                           const std::string &catalogDir, const char *kind,
                           Load load, std::string &error) {
  if (exists(nameOrPath))
    return load(nameOrPath, error);
  std::string file = catalogDir + "/" + kind + "s/" + nameOrPath + ".json";
  if (nameOrPath.find('/') == std::string::npos && exists(file)) {
    std::optional<T> entry = load(file, error);
    // A catalog entry is found by its file name: one naming itself otherwise
    // would be reported and planned under a name nobody asked for.
    if (entry && entry->name != nameOrPath) {
      error = file + ": field \"name\" is \"" +
              hetrt::format::printable(entry->name) + "\" but the catalog " +
              "finds this " + kind + " as \"" + nameOrPath +
              "\"; fix: make the name and the file name agree";
      return std::nullopt;
    }
    return entry;
  }
  error = nameOrPath + ": no such " + kind + " file, and no " + kind +
          " of the catalog at " + file + " (give a path or a catalog name)";
  return std::nullopt;
}
} // namespace

std::optional<Device> findDevice(const std::string &nameOrPath,
                                 const std::string &catalogDir,
                                 std::string &error) {
  return findEntry<Device>(nameOrPath, catalogDir, "device", loadDevice, error);
}

std::optional<Link> findLink(const std::string &nameOrPath,
                             const std::string &catalogDir, std::string &error) {
  return findEntry<Link>(nameOrPath, catalogDir, "link", loadLink, error);
}

std::string defaultCatalogDir() {
  if (const char *dir = std::getenv("HETC_HARDWARE_DIR"))
    return dir;
  return HETC_DEFAULT_HARDWARE_DIR;
}

/// The value of `measured` at `size`: interpolated on a log scale between
/// the sizes measured, the nearest one's outside them; 0 when empty.
static double interpolateLog(const std::map<int64_t, double> &measured,
                             int64_t size) {
  if (measured.empty())
    return 0;
  auto above = measured.lower_bound(size);
  if (above == measured.begin())
    return above->second;
  if (above == measured.end())
    return std::prev(above)->second;
  if (above->first == size)
    return above->second;
  auto below = std::prev(above);
  double t = (std::log(static_cast<double>(size)) -
              std::log(static_cast<double>(below->first))) /
             (std::log(static_cast<double>(above->first)) -
              std::log(static_cast<double>(below->first)));
  return std::exp(std::log(below->second) +
                  t * (std::log(above->second) - std::log(below->second)));
}

double Calibration::attentionGflopsAt(int64_t headDim) const {
  return interpolateLog(attentionGflops, headDim);
}

namespace {
/// `format`'s rate for a model `width` wide from rates per width, else its
/// single rate, else 0.
double rateAt(const std::map<std::string, std::map<int64_t, double>> &byWidth,
              const std::map<std::string, double> &single,
              const std::string &format, int64_t width) {
  auto rates = byWidth.find(format);
  if (width > 0 && rates != byWidth.end())
    return interpolateLog(rates->second, width);
  auto rate = single.find(format);
  return rate == single.end() ? 0 : rate->second;
}
} // namespace

double Calibration::prefillTflopsAt(const std::string &format,
                                    int64_t width) const {
  return rateAt(prefillTflopsByWidth, prefillTflops, format, width);
}

double Calibration::decodeGBPerSAt(const std::string &format,
                                   int64_t width) const {
  return rateAt(decodeGBPerSByWidth, decodeGBPerS, format, width);
}

double Calibration::streamScaleAt(double bytes) const {
  if (readGBPerSByMiB.empty())
    return 1;
  int64_t mib = std::max<int64_t>(1, std::llround(bytes / (1 << 20)));
  return interpolateLog(readGBPerSByMiB, mib) / readGBPerSByMiB.rbegin()->second;
}

std::string deviceToJson(const Device &device, int indent) {
  json peak = json::object();
  for (int i = 0; i < kNumDataTypes; ++i)
    peak[dataTypeKey(static_cast<DataType>(i))] = device.peakTflops[i];
  json memory = json::array();
  for (const MemoryTier &tier : device.memory) {
    json entry = {{"name", tier.name},
                  {"capacity_bytes", tier.capacityBytes},
                  {"read_gb_per_s", tier.readGBPerS},
                  {"latency_ns", tier.latencyNs}};
    if (!tier.space.empty())
      entry["space"] = tier.space;
    memory.push_back(entry);
  }
  json object = {{"schema", "hetc.device/1"},
                 {"name", device.name},
                 {"kind", deviceKindName(device.kind)},
                 {"arch", device.arch},
                 {"peak_tflops", peak},
                 {"memory", memory},
                 {"launch_overhead_us", device.launchOverheadUs},
                 {"power_w", {{"idle", device.idleWatts}, {"active", device.activeWatts}}},
                 {"price_usd_per_hour", device.priceUsdPerHour}};
  if (!device.description.empty())
    object["description"] = device.description;
  if (device.calibration) {
    const Calibration &c = *device.calibration;
    object["calibration"] = {{"decode_gb_per_s", c.decodeGBPerS},
                             {"prefill_tflops", c.prefillTflops},
                             {"dispatch_us", c.dispatchUs},
                             {"threads", c.threads},
                             {"sample_us", c.sampleUs},
                             {"sample_ns_per_logit", c.sampleNsPerLogit},
                             {"attention_gflops", nlohmann::json::object()}};
    for (const auto &[headDim, rate] : c.attentionGflops)
      object["calibration"]["attention_gflops"][std::to_string(headDim)] = rate;
    for (auto [key, ratesByWidth] :
         {std::pair{"prefill_tflops_by_width", &c.prefillTflopsByWidth},
          std::pair{"decode_gb_per_s_by_width", &c.decodeGBPerSByWidth}}) {
      if (ratesByWidth->empty())
        continue;
      json byWidth = json::object();
      for (const auto &[format, rates] : *ratesByWidth)
        for (const auto &[width, rate] : rates)
          byWidth[format][std::to_string(width)] = rate;
      object["calibration"][key] = byWidth;
    }
    if (!c.readGBPerSByMiB.empty()) {
      json bySize = json::object();
      for (const auto &[mib, rate] : c.readGBPerSByMiB)
        bySize[std::to_string(mib)] = rate;
      object["calibration"]["read_gb_per_s_by_mib"] = bySize;
    }
    if (!c.decodeInCacheGBPerS.empty())
      object["calibration"]["decode_in_cache_gb_per_s"] = c.decodeInCacheGBPerS;
  }
  return object.dump(indent);
}

namespace {

/// "cpu0, gpu0" for messages that list a system's devices.
std::string deviceIds(const System &system) {
  std::string ids;
  for (const SystemDevice &device : system.devices)
    ids += (ids.empty() ? "" : ", ") + device.id;
  return ids;
}

} // namespace

bool applyDeviceMemoryCaps(const std::vector<std::string> &caps,
                           System &system, std::vector<std::string> &warnings,
                           std::string &error) {
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
    if (index < 0)
      return fail(system.name + " has no device \"" + id + "\" (it has " +
                  deviceIds(system) + ")");
    std::optional<uint64_t> parsed = hetrt::format::parseByteSize(size);
    if (!parsed || *parsed == 0)
      return fail("the size must be a positive number with a unit (B, KiB, "
                  "MiB, GiB, TiB, KB, MB, GB or TB), e.g. 8GiB");
    double bytes = static_cast<double>(*parsed);
    Device &device = system.devices[index].device;
    if (device.memory.empty())
      return fail(id + " has no memory to cap");
    MemoryTier &home = device.memory.front();
    if (bytes >= static_cast<double>(home.capacityBytes)) {
      // Not an error (the plan may use all of it), but likely a typo.
      warnings.push_back("--device-memory " + cap + " is no less than the " +
                         hetrt::core::formatBytes(home.capacityBytes) + " " +
                         id + " has; the cap changes nothing");
      continue;
    }
    home.capacityBytes = static_cast<uint64_t>(bytes);
  }
  return true;
}

bool restrictComputeDevices(const std::vector<std::string> &ids,
                            System &system, std::string &error) {
  if (ids.empty())
    return true;
  std::vector<bool> listed(system.devices.size(), false);
  for (const std::string &id : ids) {
    int index = system.deviceIndex(id);
    if (index < 0) {
      error = "--compute-devices " + id + ": " + system.name +
              " has no device \"" + id + "\" (it has " + deviceIds(system) +
              ")";
      return false;
    }
    if (listed[index]) {
      error = "--compute-devices " + id + ": listed twice; name each device "
              "once";
      return false;
    }
    listed[index] = true;
  }
  for (size_t d = 0; d < system.devices.size(); ++d)
    system.devices[d].computes = listed[d];
  return true;
}

} // namespace hetc::hardware
