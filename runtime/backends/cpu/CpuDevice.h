// The CPU back end of the device layer: host memory as its one memory space,
// queues that run their work in order on a thread of their own, and events
// on a mutex and a condition variable.
#ifndef HETRT_BACKENDS_CPU_CPUDEVICE_H
#define HETRT_BACKENDS_CPU_CPUDEVICE_H

#include "abi/CodeRecord.h"
#include "runtime/hal/Device.h"

#include <array>
#include <cstdint>

#include <memory>

namespace hetrt::cpu {

/// The machine's CPU as a device ("cpu0"), with one host-visible memory
/// space ("host") of the machine's physical memory; it runs x86 segment code
/// (hal::ExecutableFormat::X86SharedObject).
std::shared_ptr<hal::Device> createCpuDevice();

/// The record (abi/CodeRecord.h) of segment code `executable` holds, when
/// the CPU device loaded it; null for any other executable.
const std::array<int64_t, format::kCodeRecordLength> *
segmentCodeRecord(const hal::Executable &executable);

/// The weight layouts (CodeImage::weightLayouts) segment code `executable`
/// reads, when the CPU device loaded it; null for any other executable.
const std::vector<int64_t> *
segmentWeightLayouts(const hal::Executable &executable);

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_CPUDEVICE_H
