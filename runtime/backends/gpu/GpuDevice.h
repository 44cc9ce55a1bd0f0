// The device layer on a GPU driver (GpuDriver.h): the CUDA and HIP back ends
// are this one implementation over their drivers. Memory spaces are the
// GPU's own memory ("device-local") and pinned host memory it reads and
// writes in place ("host-pinned"); each queue is a stream of the device's
// primary context, fed from its own thread, and synchronized only where an
// event is signaled, a read returns or the queue finishes, so kernels and
// copies queue up on the GPU without a host round trip each.
#ifndef HETRT_BACKENDS_GPU_GPUDEVICE_H
#define HETRT_BACKENDS_GPU_GPUDEVICE_H

#include "runtime/backends/gpu/GpuDriver.h"
#include "runtime/hal/Device.h"

#include <memory>
#include <vector>

namespace hetrt::gpu {

/// Index of each memory space in DeviceInfo::memories.
constexpr int kDeviceLocal = 0;
constexpr int kHostPinned = 1;
/// Present only where the driver offers managed memory on the device.
constexpr int kManaged = 2;

/// The driver's GPUs as devices named kind() + index ("cuda0").
std::vector<std::shared_ptr<hal::Device>>
createGpuDevices(const std::shared_ptr<GpuDriver> &driver);

} // namespace hetrt::gpu

#endif // HETRT_BACKENDS_GPU_GPUDEVICE_H
