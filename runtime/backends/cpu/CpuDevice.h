// The CPU back end of the device layer: host memory as its one memory space,
// queues that run their work in order on a thread of their own, and events
// on a mutex and a condition variable.
#ifndef HETRT_BACKENDS_CPU_CPUDEVICE_H
#define HETRT_BACKENDS_CPU_CPUDEVICE_H

#include "runtime/hal/Device.h"

#include <memory>

namespace hetrt::cpu {

/// The machine's CPU as a device ("cpu0"), with one host-visible memory
/// space ("host") of the machine's physical memory; it runs x86 segment code
/// (hal::ExecutableFormat::X86SharedObject).
std::shared_ptr<hal::Device> createCpuDevice();

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_CPUDEVICE_H
