// The CUDA back end of the device layer: NVIDIA GPUs through the driver API,
// loaded at run time (dlopen of libcuda.so.1), so one runtime runs with or
// without an NVIDIA driver.
#ifndef HETRT_BACKENDS_CUDA_CUDADRIVER_H
#define HETRT_BACKENDS_CUDA_CUDADRIVER_H

#include "runtime/hal/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace hetrt::cuda {

/// The NVIDIA GPUs of this machine ("cuda0", ...). Without a driver or a
/// GPU, returns none and appends the reason to `unavailable`.
std::vector<std::shared_ptr<hal::Device>>
enumerateCudaDevices(std::vector<std::string> &unavailable);

} // namespace hetrt::cuda

#endif // HETRT_BACKENDS_CUDA_CUDADRIVER_H
