// `hetc calibrate` on a Vulkan device: its memory's bandwidth, the link to
// the host, the cost of a dispatch and the f32 rate of the SPIR-V kernel
// library's matmul, measured through the runtime's device layer.
#ifndef HETC_TOOLS_HETC_CALIBRATEVULKAN_H
#define HETC_TOOLS_HETC_CALIBRATEVULKAN_H

#include "hetc/Cost/ModelShape.h"
#include "hetrt/hetrt.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hetc::cli {

/// A prompt of ids past the special tokens, the same for every measurement.
std::vector<int32_t> syntheticPrompt(int64_t tokens);

/// A synthetic model compiled with its SPIR-V programs, whose decode steps
/// the device's calibration times.
struct ProgramModel {
  std::string gguf;
  std::string pack;
  cost::ModelShape shape;
};

struct VulkanCalibration {
  /// The system's device entry ({"id", "device"}) and its link to the host
  /// memory `hostMemory` ("cpu0.dram").
  nlohmann::json device;
  nlohmann::json link;
  /// For the report.
  double memoryGBPerS = 0;
  double linkGBPerS = 0;
  double dispatchUs = 0;
  double f32Tflops = 0;
  /// From hetc's own programs (the calibration the cost model reads): a
  /// dispatch in a decode step's chain, the f32 weights' streaming rate of
  /// the decode kernels and the f32 rate of the prefill's.
  double programDispatchUs = 0;
  double decodeGBPerS = 0;
  double cachedDecodeGBPerS = 0;
  /// The two decode rates by the MiB their models' steps stream.
  std::map<int64_t, double> decodeGBPerSByMiB;
  double prefillTflops = 0;
};

/// Measures `device` through the runtime's public API: its memory, its
/// link to the host, the fixed cost of a dispatch and the kernel library's
/// f32 matmul rate; then the decode and prefill of `models` (f32: a tiny
/// model whose steps are almost all dispatches, one that stays in the
/// caches, and one whose steps stream tens of MiB of weights) on the
/// device, from which the dispatch cost and the rates the cost model
/// applies come. Nothing, with `error` naming the
/// device and the step, when a measurement cannot run.
std::optional<VulkanCalibration>
calibrateVulkanDevice(const hetrt::api::DeviceInfo &device,
                      const std::string &hostMemory,
                      const std::vector<ProgramModel> &models,
                      std::string &error);

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_CALIBRATEVULKAN_H
