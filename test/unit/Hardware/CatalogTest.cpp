// The hardware catalog: every shipped file loads, and each kind of bad input
// gets an error naming the file, the field and the fix.
#include "hetc/Hardware/Catalog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string>
#include <vector>

namespace {

using namespace hetc::hardware;

std::vector<std::string> jsonFiles(const std::string &dir) {
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
        files.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  return files;
}

const char *kDevice = R"({
  "schema": "hetc.device/1", "name": "test-gpu", "kind": "cuda", "arch": "sm_90",
  "peak_tflops": {"f32": 60, "f16": 900, "bf16": 900, "int8": 1800},
  "memory": [{"name": "hbm", "space": "hbm", "capacity_bytes": 1000,
              "read_gb_per_s": 3000, "latency_ns": 500}],
  "launch_overhead_us": 5, "power_w": {"idle": 70, "active": 700},
  "price_usd_per_hour": 2.5})";

/// kDevice with `from` replaced by `to`.
std::string deviceWith(const std::string &from, const std::string &to) {
  std::string text = kDevice;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

void expectDeviceError(const std::string &text, const std::string &field,
                       const std::string &problem) {
  std::string error;
  EXPECT_FALSE(parseDevice(text, "bad.json", error));
  EXPECT_NE(error.find("bad.json: "), std::string::npos) << error;
  if (!field.empty())
    EXPECT_NE(error.find("field \"" + field + "\""), std::string::npos) << error;
  EXPECT_NE(error.find(problem), std::string::npos) << error;
}

TEST(Catalog, EveryShippedFileLoads) {
  std::string dir = defaultCatalogDir();
  std::vector<std::string> devices = jsonFiles(dir + "/devices");
  std::vector<std::string> links = jsonFiles(dir + "/links");
  std::vector<std::string> systems = jsonFiles(dir + "/systems");
  EXPECT_GE(devices.size(), 12u);
  EXPECT_GE(links.size(), 6u);
  EXPECT_GE(systems.size(), 5u);
  std::string error;
  for (const std::string &file : devices) {
    std::optional<Device> device = loadDevice(file, error);
    ASSERT_TRUE(device) << error;
    EXPECT_NE(file.find("/" + device->name + ".json"), std::string::npos)
        << file << " names itself " << device->name;
  }
  for (const std::string &file : links)
    EXPECT_TRUE(loadLink(file, error)) << error;
  for (const std::string &file : systems)
    EXPECT_TRUE(loadSystem(file, dir, error)) << error;
}

TEST(Catalog, SystemResolvesDevicesLinksAndTiers) {
  std::string error;
  std::optional<System> system = findSystem("rtx4090-ryzen", defaultCatalogDir(), error);
  ASSERT_TRUE(system) << error;
  ASSERT_EQ(system->devices.size(), 2u);
  EXPECT_EQ(system->devices[0].id, "gpu0");
  EXPECT_EQ(system->devices[0].device.kind, DeviceKind::Cuda);
  EXPECT_EQ(system->devices[0].device.memory[0].capacityBytes, 24ull << 30);
  ASSERT_FALSE(system->links.empty());
  const SystemLink &pcie = system->links[0];
  EXPECT_EQ(pcie.from.device, 0);
  EXPECT_EQ(pcie.to.device, 1);
  EXPECT_EQ(system->devices[1].device.memory[pcie.to.tier].name, "ddr5");
  EXPECT_NEAR(pcie.link.gbPerS, 31.5, 1e-9);
}

TEST(Catalog, DeviceFieldsAreRead) {
  std::string error;
  std::optional<Device> device = parseDevice(kDevice, "test.json", error);
  ASSERT_TRUE(device) << error;
  EXPECT_EQ(device->peak(DataType::F16), 900);
  EXPECT_EQ(device->peak(DataType::Int4), 0); // may be left out
  EXPECT_EQ(device->memory[0].readGBPerS, 3000);
  EXPECT_EQ(device->activeWatts, 700);
  // Round trip through the JSON calibrate writes.
  std::optional<Device> again =
      parseDevice(deviceToJson(*device, 2), "again.json", error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->memory[0].capacityBytes, 1000u);
  EXPECT_EQ(again->peak(DataType::Int8), 1800);
}

// What `hetc calibrate` measured survives the system JSON it writes; the
// sampler's figures are optional, so calibrations written before them load.
TEST(Catalog, CalibrationIsReadAndWritten) {
  const std::string calibration =
      "\"price_usd_per_hour\": 2.5, \"calibration\": {\"decode_gb_per_s\": "
      "{\"q4_0\": 20.5}, \"prefill_tflops\": {\"q4_0\": 0.4}, "
      "\"dispatch_us\": 0.3, \"threads\": 2, \"sample_us\": 1.5, "
      "\"sample_ns_per_logit\": 0.8, \"attention_gflops\": {\"16\": 2.5, \"128\": 20}}";
  std::string error;
  std::optional<Device> device = parseDevice(
      deviceWith("\"price_usd_per_hour\": 2.5", calibration), "c.json", error);
  ASSERT_TRUE(device) << error;
  ASSERT_TRUE(device->calibration);
  EXPECT_EQ(device->calibration->decodeGBPerS.at("q4_0"), 20.5);
  EXPECT_EQ(device->calibration->dispatchUs, 0.3);
  EXPECT_EQ(device->calibration->sampleUs, 1.5);
  EXPECT_EQ(device->calibration->sampleNsPerLogit, 0.8);
  std::optional<Device> again =
      parseDevice(deviceToJson(*device, -1), "again.json", error);
  ASSERT_TRUE(again && again->calibration) << error;
  EXPECT_EQ(again->calibration->sampleNsPerLogit, 0.8);
  EXPECT_EQ(again->calibration->threads, 2);
  EXPECT_EQ(again->calibration->attentionGflops.at(16), 2.5);
  EXPECT_EQ(again->calibration->attentionGflops.at(128), 20);
  // Between the sizes measured, log-linear; outside them, the nearest.
  EXPECT_DOUBLE_EQ(again->calibration->attentionGflopsAt(8), 2.5);
  EXPECT_DOUBLE_EQ(again->calibration->attentionGflopsAt(256), 20);
  EXPECT_NEAR(again->calibration->attentionGflopsAt(64), 2.5 * 4, 1e-9);
  EXPECT_EQ(Calibration{}.attentionGflopsAt(64), 0);

  std::string older = calibration;
  older.erase(older.find(", \"sample_us\""));
  older += "}";
  device = parseDevice(deviceWith("\"price_usd_per_hour\": 2.5", older),
                       "older.json", error);
  ASSERT_TRUE(device && device->calibration) << error;
  EXPECT_EQ(device->calibration->sampleNsPerLogit, 0);

  std::string negative = calibration;
  negative.replace(negative.find("0.8"), 3, "-2");
  expectDeviceError(deviceWith("\"price_usd_per_hour\": 2.5", negative),
                    "calibration.sample_ns_per_logit",
                    "expected a non-negative number, got -2");
  std::string badHead = calibration;
  badHead.replace(badHead.find("\"16\""), 4, "\"wide\"");
  expectDeviceError(deviceWith("\"price_usd_per_hour\": 2.5", badHead),
                    "calibration.attention_gflops.wide", "is not a head size");
}

// A device whose calibration has single rates for q4_0 and f16 and `byWidth`
// (`"<key>": {...}` members) besides, as its text.
std::string calibratedDevice(const std::string &byWidth) {
  return deviceWith(
      "\"price_usd_per_hour\": 2.5",
      "\"price_usd_per_hour\": 2.5, \"calibration\": {\"decode_gb_per_s\": "
      "{\"q4_0\": 20.5, \"f16\": 30}, \"prefill_tflops\": {\"q4_0\": 0.4, "
      "\"f16\": 0.2}, \"dispatch_us\": 0.3, \"threads\": 2, " +
          byWidth + "}");
}

/// `text`'s calibration after a round trip through deviceToJson.
Calibration roundTripCalibration(const std::string &text) {
  std::string error;
  std::optional<Device> device = parseDevice(text, "c.json", error);
  EXPECT_TRUE(device && device->calibration) << error;
  if (!device || !device->calibration)
    return {};
  std::optional<Device> again =
      parseDevice(deviceToJson(*device, -1), "again.json", error);
  EXPECT_TRUE(again && again->calibration) << error;
  return again && again->calibration ? *again->calibration : Calibration{};
}

// Prefill rates per model width: interpolated on a log scale between the
// widths measured, the nearest outside them; a format measured at one width
// (or a unit without a width) keeps its single rate.
TEST(Catalog, PrefillRatesByWidthAreInterpolated) {
  const std::string byWidth =
      "\"prefill_tflops_by_width\": {\"q4_0\": {\"512\": 0.1, \"2048\": 0.4}}";
  const Calibration c = roundTripCalibration(calibratedDevice(byWidth));
  EXPECT_DOUBLE_EQ(c.prefillTflopsAt("q4_0", 256), 0.1);
  EXPECT_DOUBLE_EQ(c.prefillTflopsAt("q4_0", 4096), 0.4);
  EXPECT_NEAR(c.prefillTflopsAt("q4_0", 1024), 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(c.prefillTflopsAt("q4_0", 0), 0.4);
  EXPECT_DOUBLE_EQ(c.prefillTflopsAt("f16", 768), 0.2);
  EXPECT_EQ(c.prefillTflopsAt("q8_0", 768), 0);

  std::string badWidth = byWidth;
  badWidth.replace(badWidth.find("\"512\""), 5, "\"narrow\"");
  expectDeviceError(calibratedDevice(badWidth),
                    "calibration.prefill_tflops_by_width.q4_0.narrow",
                    "is not a model width");
  std::string notObject = byWidth;
  notObject.replace(notObject.find("{\"512\""), 25, "3");
  expectDeviceError(calibratedDevice(notObject),
                    "calibration.prefill_tflops_by_width.q4_0",
                    "expected {\"<width>\": TFLOP/s}");
}

// Decode rates per model width, the same way: a 768-wide model streams its
// short rows faster than a 2048-wide one reads its blocks of rows.
TEST(Catalog, DecodeRatesByWidthAreInterpolated) {
  const std::string byWidth =
      "\"decode_gb_per_s_by_width\": {\"f16\": {\"768\": 32, \"3072\": 8}}";
  const Calibration c = roundTripCalibration(calibratedDevice(byWidth));
  EXPECT_DOUBLE_EQ(c.decodeGBPerSAt("f16", 512), 32);
  EXPECT_NEAR(c.decodeGBPerSAt("f16", 1536), 16, 1e-12);
  EXPECT_DOUBLE_EQ(c.decodeGBPerSAt("f16", 8192), 8);
  EXPECT_DOUBLE_EQ(c.decodeGBPerSAt("f16", 0), 30);
  EXPECT_DOUBLE_EQ(c.decodeGBPerSAt("q4_0", 768), 20.5);
  EXPECT_EQ(c.decodeGBPerSAt("q8_0", 768), 0);
  EXPECT_TRUE(c.prefillTflopsByWidth.empty());

  std::string badRate = byWidth;
  badRate.replace(badRate.find("32"), 2, "-1");
  expectDeviceError(calibratedDevice(badRate),
                    "calibration.decode_gb_per_s_by_width.f16.768",
                    "GB/s");
  std::string notObject = byWidth;
  notObject.replace(notObject.find("{\"f16\": {"), 31, "[]");
  expectDeviceError(calibratedDevice(notObject),
                    "calibration.decode_gb_per_s_by_width",
                    "expected {\"<format>\": {\"<width>\": GB/s}}");
}

// The read bandwidth per buffer size: a model streaming fewer bytes a step
// than the largest size measured reads faster by the ratio of the rates;
// larger ones at the largest size's rate. A format's in-cache decode rate is
// kept as measured.
TEST(Catalog, StreamScaleFollowsTheReadCurve) {
  const std::string curve =
      "\"read_gb_per_s_by_mib\": {\"16\": 80, \"64\": 40, \"256\": 20}, "
      "\"decode_in_cache_gb_per_s\": {\"q4_0\": 60}";
  const Calibration c = roundTripCalibration(calibratedDevice(curve));
  constexpr double kMiB = 1 << 20;
  EXPECT_DOUBLE_EQ(c.streamScaleAt(256 * kMiB), 1);
  EXPECT_DOUBLE_EQ(c.streamScaleAt(4096 * kMiB), 1);
  EXPECT_DOUBLE_EQ(c.streamScaleAt(64 * kMiB), 2);
  EXPECT_NEAR(c.streamScaleAt(128 * kMiB), std::sqrt(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(c.streamScaleAt(1 * kMiB), 4);
  EXPECT_DOUBLE_EQ(c.decodeInCacheGBPerS.at("q4_0"), 60);
  EXPECT_DOUBLE_EQ(Calibration{}.streamScaleAt(64 * kMiB), 1);

  std::string badSize = curve;
  badSize.replace(badSize.find("\"16\""), 4, "\"16M\"");
  expectDeviceError(calibratedDevice(badSize),
                    "calibration.read_gb_per_s_by_mib.16M",
                    "is not a buffer size in MiB");
  std::string badRate = curve;
  badRate.replace(badRate.find("60"), 2, "-3");
  expectDeviceError(calibratedDevice(badRate),
                    "calibration.decode_in_cache_gb_per_s.q4_0", "GB/s");
  std::string notObject = curve;
  notObject.replace(notObject.find("{\"q4_0\": 60}"), 13, "7");
  expectDeviceError(calibratedDevice(notObject),
                    "calibration.decode_in_cache_gb_per_s",
                    "expected {\"<format>\": GB/s}");
}

TEST(Catalog, BadDevicesNameTheFieldAndTheFix) {
  expectDeviceError("{ not json", "", "is not valid JSON");
  expectDeviceError("[1, 2]", "", "expected a JSON object");
  expectDeviceError(deviceWith("hetc.device/1", "hetc.device/9"), "schema",
                    "not \"hetc.device/1\"");
  expectDeviceError(deviceWith("\"kind\": \"cuda\"", "\"kind\": \"tpu\""), "kind",
                    "use one of cpu, cuda, hip, spirv");
  expectDeviceError(deviceWith("\"read_gb_per_s\": 3000", "\"read_gb_per_s\": -1"),
                    "memory[0].read_gb_per_s", "expected a positive number, got -1");
  expectDeviceError(deviceWith("\"read_gb_per_s\": 3000", "\"read_gb_per_s\": \"fast\""),
                    "memory[0].read_gb_per_s", "fix: give the peak read bandwidth");
  expectDeviceError(deviceWith("\"capacity_bytes\": 1000", "\"capacity_bytes\": 1.5"),
                    "memory[0].capacity_bytes", "whole number of bytes");
  expectDeviceError(deviceWith("\"capacity_bytes\": 1000,", ""),
                    "memory[0].capacity_bytes", "is missing");
  expectDeviceError(deviceWith("\"launch_overhead_us\"", "\"launch_overhead\""),
                    "launch_overhead", "is not a known field");
  expectDeviceError(deviceWith("\"idle\": 70", "\"idle\": 900"), "power_w.idle",
                    "is above power_w.active");
  expectDeviceError(deviceWith("\"space\": \"hbm\"", "\"space\": \"vram\""),
                    "memory[0].space", "use one of hbm, dram, cxl, disk");
  {
    std::string text = kDevice;
    size_t open = text.find("\"memory\": [") + 11;
    size_t close = text.find(']', open);
    expectDeviceError(text.replace(open, close - open, ""), "memory",
                      "non-empty array");
  }
  expectDeviceError(
      deviceWith("\"f32\": 60, \"f16\": 900, \"bf16\": 900, \"int8\": 1800",
                 "\"f32\": 0, \"f16\": 0, \"bf16\": 0, \"int8\": 0"),
      "peak_tflops", "every peak is 0");
}

TEST(Catalog, BadSystemsNameTheFieldAndTheFix) {
  std::string dir = defaultCatalogDir();
  auto expectError = [&](const std::string &text, const std::string &field,
                         const std::string &problem) {
    std::string error;
    EXPECT_FALSE(parseSystem(text, "sys.json", dir, error));
    EXPECT_NE(error.find("sys.json: "), std::string::npos) << error;
    EXPECT_NE(error.find("field \"" + field + "\""), std::string::npos) << error;
    EXPECT_NE(error.find(problem), std::string::npos) << error;
  };
  std::string head = R"({"schema": "hetc.system/1", "name": "s", "devices": [)";
  expectError(head + R"({"id": "g", "device": "no-such-gpu"}]})", "devices[0].device",
              "is not in the catalog");
  expectError(head + R"({"id": "g", "device": "nvidia-h100-sxm"},
                        {"id": "g", "device": "amd-epyc-genoa"}]})",
              "devices[1].id", "is used twice");
  // Catalog names are file names in the catalog, never paths out of it, and
  // names printed in plans and errors hold no control characters.
  expectError(head + R"({"id": "g", "device": "../devices/nvidia-h100-sxm"}]})",
              "devices[0].device", "is not a catalog name");
  expectError(head + "{\"id\": \"g\\u001b[2J\", \"device\": \"nvidia-h100-sxm\"}]}",
              "devices[0].id", "\"g\\x1b[2J\" contains a control character");
  expectError(head + R"({"id": "g", "device": "nvidia-h100-sxm"},
                        {"id": "c", "device": "amd-epyc-genoa"}],
                "links": [{"from": "g.hbm3", "to": "c.ddr4", "link": "pcie5-x16"}]})",
              "links[0].to", "is not a memory of this system");
  expectError(head + R"({"id": "g", "device": "nvidia-h100-sxm"},
                        {"id": "c", "device": "amd-epyc-genoa"}],
                "links": [{"from": "g.hbm3", "to": "c.ddr5", "link": "pcie9"}]})",
              "links[0].link", "is not in the catalog");
  expectError(head + R"({"id": "g", "device": {"schema": "hetc.device/1"}}]})",
              "devices[0].device.name", "is missing");
  std::string error;
  EXPECT_FALSE(findSystem("no-such-system", dir, error));
  EXPECT_NE(error.find("no-such-system: no such system file"), std::string::npos) << error;
}

// A catalog entry is found by its file name, so a file that names itself
// otherwise is refused instead of being planned under another name.
TEST(Catalog, ACatalogEntryNamedUnlikeItsFileIsRefused) {
  char pattern[] = "/tmp/hetc-catalog-XXXXXX";
  ASSERT_TRUE(mkdtemp(pattern));
  std::string dir = pattern;
  ASSERT_EQ(mkdir((dir + "/devices").c_str(), 0755), 0);
  std::string path = dir + "/devices/other-gpu.json";
  FILE *file = fopen(path.c_str(), "w");
  ASSERT_TRUE(file);
  fputs(kDevice, file);
  fclose(file);
  std::string error;
  EXPECT_FALSE(findDevice("other-gpu", dir, error));
  EXPECT_NE(error.find("other-gpu.json: field \"name\" is \"test-gpu\" but "
                       "the catalog finds this device as \"other-gpu\"; fix: "
                       "make the name and the file name agree"),
            std::string::npos)
      << error;
  // By path, a file may name its device as it likes.
  EXPECT_TRUE(findDevice(path, dir, error)) << error;
  std::remove(path.c_str());
  rmdir((dir + "/devices").c_str());
  rmdir(dir.c_str());
}

} // namespace
