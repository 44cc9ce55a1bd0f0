// `hetc calibrate` on a Vulkan device: its memory's bandwidth, the link to
// the host, the cost of a dispatch and the f32 rate of the SPIR-V kernel
// library's matmul, measured through the runtime's device layer.
#ifndef HETC_TOOLS_HETC_CALIBRATEVULKAN_H
#define HETC_TOOLS_HETC_CALIBRATEVULKAN_H

#include "hetrt/hetrt.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace hetc::cli {

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
};

/// Measures `device`; nothing with `error` naming the device and the step
/// when a measurement cannot run.
/// Measures `device` through the runtime's public API: its memory, its
/// link to the host, the fixed cost of a dispatch and the kernel library's
/// f32 matmul rate.
std::optional<VulkanCalibration>
calibrateVulkanDevice(const hetrt::api::DeviceInfo &device,
                      const std::string &hostMemory, std::string &error);

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_CALIBRATEVULKAN_H
