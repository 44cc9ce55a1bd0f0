// Hardware as data: devices, links between memories and systems, read from
// the JSON files documented in docs/hardware-catalog.md. Every field is
// validated; an error names the file, the field and the fix.
#ifndef HETC_HARDWARE_CATALOG_H
#define HETC_HARDWARE_CATALOG_H

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hetc::hardware {

enum class DeviceKind { Cpu, Cuda, Hip, Spirv };

/// Data types with a peak throughput in the catalog.
enum class DataType { F32, F16, BF16, Int8, Int4 };
inline constexpr int kNumDataTypes = 5;
/// The catalog's key of `type` ("f32", "f16", "bf16", "int8", "int4").
const char *dataTypeKey(DataType type);
const char *deviceKindName(DeviceKind kind);

struct MemoryTier {
  std::string name;
  /// hbm | dram | cxl | disk (empty when the file does not say).
  std::string space;
  uint64_t capacityBytes = 0;
  double readGBPerS = 0;
  double latencyNs = 0;
};

/// What `hetc calibrate` measured of hetc's own generated code on a device,
/// per weight storage format ("f32", "q4_0", ...): the weight bytes per second
/// a decode step streams (dequantization included), and the FLOP rate of a
/// prefill.
struct Calibration {
  std::map<std::string, double> decodeGBPerS;
  std::map<std::string, double> prefillTflops;
  /// Seconds one dispatch of a small kernel costs, in µs.
  double dispatchUs = 0;
  int threads = 0;
  /// Choosing one token from its logits with hetc's sampler at its
  /// defaults: a fixed part (µs) and a part per vocabulary entry (ns). Zero
  /// when not measured.
  double sampleUs = 0;
  double sampleNsPerLogit = 0;
  /// The rate a decode step's attention kernels reach over a cache in the
  /// home tier, in 10^9 FLOP/s, per head size (elements) measured: small
  /// heads loop over positions, large ones vectorize. Empty when not
  /// measured.
  std::map<int64_t, double> attentionGflops;
  /// Prefill FLOP rates per weight format and model width (hidden size)
  /// measured: narrow models lose more of each matmul to its fixed costs
  /// (the reduction of a block's sums, quantizing its activations). Empty
  /// for a format measured at one width only (`prefillTflops`).
  std::map<std::string, std::map<int64_t, double>> prefillTflopsByWidth;
  /// Decode streaming rates per weight format and model width measured:
  /// each width reads its matmuls with its own blocking (rows past 16 KiB of
  /// activations share them eight weight rows at a time), and a narrow
  /// model's short rows stream faster. Empty for a format measured at one
  /// width only (`decodeGBPerS`).
  std::map<std::string, std::map<int64_t, double>> decodeGBPerSByWidth;
  /// The read bandwidth (GB/s) of a buffer read again and again, per buffer
  /// size in MiB: past the last-level cache part of a buffer still stays in
  /// it between passes, so a model of tens of MiB decodes faster per byte
  /// than one of gigabytes. When measured, the decode rates above are those
  /// of the largest size here (the calibrating models' own sizes divided
  /// out); empty in calibrations that predate it.
  std::map<int64_t, double> readGBPerSByMiB;
  /// Decode rates per weight format of a model that stays in the caches:
  /// the bound of a format whose kernels compute more than they read, which
  /// staying in the cache cannot lift. Empty when not measured.
  std::map<std::string, double> decodeInCacheGBPerS;

  /// The attention rate for heads of `headDim` elements: interpolated on a
  /// log scale between the sizes measured, the nearest one's outside them;
  /// 0 when none was measured.
  double attentionGflopsAt(int64_t headDim) const;
  /// The prefill rate of `format` for a model `width` wide: interpolated
  /// like attentionGflopsAt between the widths measured, `prefillTflops`
  /// where only that was measured (or `width` is 0), 0 when neither was.
  double prefillTflopsAt(const std::string &format, int64_t width) const;
  /// The decode rate of `format` for a model `width` wide, as
  /// prefillTflopsAt interpolates its rates.
  double decodeGBPerSAt(const std::string &format, int64_t width) const;
  /// How much faster than the decode rates a model reading `bytes` of
  /// weights per step streams them: the read bandwidth at that size over
  /// that of the largest size measured (interpolated like
  /// attentionGflopsAt), 1 when not measured.
  double streamScaleAt(double bytes) const;
};

struct Device {
  std::string name;
  std::string description;
  DeviceKind kind = DeviceKind::Cpu;
  std::string arch;
  /// Dense peak per DataType, in 10^12 operations/s; 0 = not supported.
  std::array<double, kNumDataTypes> peakTflops{};
  /// Fastest first; the first is the device's home memory.
  std::vector<MemoryTier> memory;
  double launchOverheadUs = 0;
  double idleWatts = 0;
  double activeWatts = 0;
  double priceUsdPerHour = 0;
  std::optional<Calibration> calibration;

  double peak(DataType type) const {
    return peakTflops[static_cast<int>(type)];
  }
  /// The tier named `name`, or null.
  const MemoryTier *tier(const std::string &name) const;
};

struct Link {
  std::string name;
  std::string description;
  /// Usable bandwidth in each direction, 10^9 bytes/s.
  double gbPerS = 0;
  double latencyUs = 0;
  bool bidirectional = true;
};

/// A memory of a system: `device` indexes System::devices, `tier` the
/// device's memory list.
struct MemoryRef {
  int device = 0;
  int tier = 0;
};

struct SystemLink {
  MemoryRef from;
  MemoryRef to;
  Link link;
};

struct SystemDevice {
  std::string id;
  Device device;
  /// Whether plans may run units on the device (--compute-devices leaves
  /// the others out); its memories stay homes for other devices' weights.
  bool computes = true;
};

struct System {
  std::string name;
  std::string description;
  std::vector<SystemDevice> devices;
  std::vector<SystemLink> links;

  /// The device with id `id`, or -1.
  int deviceIndex(const std::string &id) const;
};

/// Parse `text` (the contents of `origin`). On failure return nothing and set
/// `error` to "ORIGIN: field "a.b[2].c": problem; fix".
std::optional<Device> parseDevice(const std::string &text,
                                  const std::string &origin,
                                  std::string &error);
std::optional<Link> parseLink(const std::string &text,
                              const std::string &origin, std::string &error);
/// A system's devices and links are catalog names, resolved as
/// `catalogDir/devices/NAME.json` and `catalogDir/links/NAME.json`, or
/// objects written inline (as `hetc calibrate` writes them).
std::optional<System> parseSystem(const std::string &text,
                                  const std::string &origin,
                                  const std::string &catalogDir,
                                  std::string &error);

/// Reads and parses a file.
std::optional<Device> loadDevice(const std::string &path, std::string &error);
std::optional<Link> loadLink(const std::string &path, std::string &error);
std::optional<System> loadSystem(const std::string &path,
                                 const std::string &catalogDir,
                                 std::string &error);

/// Caps the home memory (first tier) of each device `caps` names
/// ("gpu0=8GiB", "cpu0=512MiB"; units B, KiB, MiB, GiB, TiB, or KB, MB, GB,
/// TB) in `system`, never raising it; a cap no less than the memory is
/// left out with a line in `warnings`. False with `error` naming the
/// flag, the entry and the fix.
bool applyDeviceMemoryCaps(const std::vector<std::string> &caps,
                           System &system, std::vector<std::string> &warnings,
                           std::string &error);

/// Lets plans run units only on the devices `ids` names ("vulkan0",
/// "gpu0,gpu1" after CLI11's split), e.g. to leave the CPU to the control
/// plane; their memories and every other device's stay homes for weights.
/// An empty list changes nothing. False with `error` naming the flag, the
/// entry and the fix.
bool restrictComputeDevices(const std::vector<std::string> &ids,
                            System &system, std::string &error);

/// `nameOrPath` as a file when it names one, else as a system of the catalog
/// (`catalogDir/systems/NAME.json`).
std::optional<System> findSystem(const std::string &nameOrPath,
                                 const std::string &catalogDir,
                                 std::string &error);

/// The same for a device (`catalogDir/devices/NAME.json`) and a link
/// (`catalogDir/links/NAME.json`).
std::optional<Device> findDevice(const std::string &nameOrPath,
                                 const std::string &catalogDir,
                                 std::string &error);
std::optional<Link> findLink(const std::string &nameOrPath,
                             const std::string &catalogDir, std::string &error);

/// The catalog shipped with hetc (the repository's hardware/ directory, or
/// $HETC_HARDWARE_DIR when set).
std::string defaultCatalogDir();

/// The JSON object of a device as the catalog stores it (without sources),
/// for systems written by `hetc calibrate`.
std::string deviceToJson(const Device &device, int indent);

} // namespace hetc::hardware

#endif // HETC_HARDWARE_CATALOG_H
