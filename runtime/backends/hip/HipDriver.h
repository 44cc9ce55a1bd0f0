// The HIP back end of the device layer: AMD GPUs through the HIP runtime,
// loaded at run time (dlopen of libamdhip64.so), so one runtime runs with or
// without ROCm.
#ifndef HETRT_BACKENDS_HIP_HIPDRIVER_H
#define HETRT_BACKENDS_HIP_HIPDRIVER_H

#include "runtime/hal/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace hetrt::hip {

/// The AMD GPUs of this machine ("hip0", ...). Without a HIP runtime or a
/// GPU, returns none and appends the reason to `unavailable`.
std::vector<std::shared_ptr<hal::Device>>
enumerateHipDevices(std::vector<std::string> &unavailable);

} // namespace hetrt::hip

#endif // HETRT_BACKENDS_HIP_HIPDRIVER_H
