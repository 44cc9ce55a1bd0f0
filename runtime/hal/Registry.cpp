// The devices of this machine: the CPU always, then each back end compiled
// into the runtime whose driver is present. Built once per process, so the
// C API can hand out names and descriptions that stay valid.
#include "runtime/hal/Device.h"

#include "runtime/backends/cpu/CpuDevice.h"

namespace hetrt::hal {

namespace {

struct Registry {
  std::vector<std::shared_ptr<Device>> devices;
  std::vector<std::string> unavailable;
};

const Registry &registry() {
  static const Registry instance = [] {
    Registry built;
    built.devices.push_back(cpu::createCpuDevice());
    return built;
  }();
  return instance;
}

} // namespace

std::vector<std::shared_ptr<Device>>
enumerateDevices(std::vector<std::string> *unavailable) {
  const Registry &found = registry();
  if (unavailable)
    *unavailable = found.unavailable;
  return found.devices;
}

} // namespace hetrt::hal
