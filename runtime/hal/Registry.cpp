// The devices of this machine: the CPU always, then each back end compiled
// into the runtime whose driver is present. Built once per process, so the
// C API can hand out names and descriptions that stay valid.
#include "runtime/hal/Device.h"

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/backends/cuda/CudaDriver.h"
#include "runtime/backends/hip/HipDriver.h"
#include "runtime/backends/vulkan/VulkanDevice.h"
#include "runtime/hal/SerialQueue.h"

namespace hetrt::hal {

namespace {

struct Registry {
  std::vector<std::shared_ptr<Device>> devices;
  std::vector<std::string> unavailable;
};

const Registry &registry() {
  // Never destroyed: drivers keep threads of their own, and tearing them
  // down among the process's static destructors is not safe.
  static const Registry *instance = [] {
    auto *built = new Registry();
    built->devices.push_back(cpu::createCpuDevice());
    for (std::shared_ptr<Device> &device :
         vulkan::enumerateVulkanDevices(built->unavailable))
      built->devices.push_back(std::move(device));
    for (std::shared_ptr<Device> &device :
         cuda::enumerateCudaDevices(built->unavailable))
      built->devices.push_back(std::move(device));
    for (std::shared_ptr<Device> &device :
         hip::enumerateHipDevices(built->unavailable))
      built->devices.push_back(std::move(device));
    return built;
  }();
  return *instance;
}

} // namespace

std::vector<std::shared_ptr<Device>>
enumerateDevices(std::vector<std::string> *unavailable) {
  const Registry &found = registry();
  if (unavailable)
    *unavailable = found.unavailable;
  return found.devices;
}

const std::vector<std::string> &unavailableBackEnds() {
  return registry().unavailable;
}

} // namespace hetrt::hal

std::shared_ptr<hetrt::hal::Buffer>
hetrt::hal::Device::importHostMemory(const void *, uint64_t, Error &error) {
  failWith(error, core::Failure::Unsupported,
           info().name + " cannot read host memory in place; copy it into a "
                         "buffer of the device");
  return nullptr;
}
