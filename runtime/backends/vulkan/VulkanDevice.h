// The Vulkan back end of the device layer: any Vulkan 1.2 device with a
// compute queue (a GPU, or Mesa's lavapipe on a CPU), found through the
// system's Vulkan loader, which is loaded at run time so the runtime runs
// without it.
#ifndef HETRT_BACKENDS_VULKAN_VULKANDEVICE_H
#define HETRT_BACKENDS_VULKAN_VULKANDEVICE_H

#include "runtime/hal/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace hetrt::vulkan {

/// The Vulkan devices of this machine ("vulkan0", ...). When there are none
/// (no loader, no driver, no device with compute queues and Vulkan 1.2),
/// returns none and appends the reason to `unavailable`.
std::vector<std::shared_ptr<hal::Device>>
enumerateVulkanDevices(std::vector<std::string> &unavailable);

} // namespace hetrt::vulkan

#endif // HETRT_BACKENDS_VULKAN_VULKANDEVICE_H
