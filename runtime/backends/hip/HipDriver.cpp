// The HIP back end: AMD's HIP runtime (libamdhip64.so), opened with dlopen
// so the runtime runs on machines without it, behind the GPU driver
// interface. The entry points' types come from HIP's own header (Debian's
// libamdhip64-dev); nothing links against the library.
#include "runtime/backends/hip/HipDriver.h"

#include "runtime/backends/gpu/GpuDevice.h"

#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>

#include <dlfcn.h>

namespace hetrt::hip {

namespace {

using gpu::DevicePointer;

/// HIP's entry points, as X(name, type), resolved by name with the header's
/// types (hipMalloc and hipHostMalloc are overloaded in C++, with templates
/// beside them: the C functions' types are spelled).
#define HETRT_HIP_ENTRY_POINTS(X) \
  X(hipInit, decltype(&::hipInit)) \
  X(hipRuntimeGetVersion, decltype(&::hipRuntimeGetVersion)) \
  X(hipGetDeviceCount, decltype(&::hipGetDeviceCount)) \
  X(hipGetDeviceProperties, decltype(&::hipGetDeviceProperties)) \
  X(hipSetDevice, decltype(&::hipSetDevice)) \
  X(hipMemGetInfo, decltype(&::hipMemGetInfo)) \
  X(hipMalloc, hipError_t (*)(void **, size_t)) \
  X(hipFree, decltype(&::hipFree)) \
  X(hipMallocManaged, hipError_t (*)(void **, size_t, unsigned int)) \
  X(hipHostMalloc, hipError_t (*)(void **, size_t, unsigned int)) \
  X(hipHostFree, decltype(&::hipHostFree)) \
  X(hipHostGetDevicePointer, decltype(&::hipHostGetDevicePointer)) \
  X(hipStreamCreateWithFlags, decltype(&::hipStreamCreateWithFlags)) \
  X(hipStreamDestroy, decltype(&::hipStreamDestroy)) \
  X(hipStreamSynchronize, decltype(&::hipStreamSynchronize)) \
  X(hipMemcpyAsync, decltype(&::hipMemcpyAsync)) \
  X(hipMemsetD8Async, decltype(&::hipMemsetD8Async)) \
  X(hipMemsetD16Async, decltype(&::hipMemsetD16Async)) \
  X(hipMemsetD32Async, decltype(&::hipMemsetD32Async)) \
  X(hipModuleLoadData, decltype(&::hipModuleLoadData)) \
  X(hipModuleUnload, decltype(&::hipModuleUnload)) \
  X(hipModuleGetFunction, decltype(&::hipModuleGetFunction)) \
  X(hipModuleLaunchKernel, decltype(&::hipModuleLaunchKernel)) \
  X(hipGetErrorName, decltype(&::hipGetErrorName)) \
  X(hipGetErrorString, decltype(&::hipGetErrorString))

struct Api {
#define HETRT_HIP_FIELD(name, ...) gpu::EntryPoint<__VA_ARGS__> name = nullptr;
  HETRT_HIP_ENTRY_POINTS(HETRT_HIP_FIELD)
#undef HETRT_HIP_FIELD
};

void *asPointer(DevicePointer pointer) {
  return reinterpret_cast<void *>(static_cast<uintptr_t>(pointer));
}

class HipDriver final : public gpu::GpuDriver {
public:
  static std::shared_ptr<HipDriver> open(std::string &why) {
    void *library = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!library)
      library = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *message = dlerror();
      why = std::string("hip: no HIP runtime (libamdhip64.so does not load: ") +
            (message ? message : "not found") + ")";
      return nullptr;
    }
    auto driver = std::shared_ptr<HipDriver>(new HipDriver(library));
    if (!driver->resolve(why) || !driver->start(why))
      return nullptr;
    return driver;
  }

  const char *kind() const override { return "hip"; }
  std::string version() const override { return version_; }
  const std::vector<gpu::GpuProperties> &devices() const override {
    return devices_;
  }

  std::string makeCurrent(int index) override {
    return check(api_.hipSetDevice(index), "hipSetDevice");
  }
  std::string freeMemory(int, uint64_t &freeBytes) override {
    size_t free = 0, total = 0;
    std::string why = check(api_.hipMemGetInfo(&free, &total), "hipMemGetInfo");
    freeBytes = free;
    return why;
  }
  std::string allocateDevice(uint64_t size, DevicePointer &memory) override {
    void *pointer = nullptr;
    std::string why = check(api_.hipMalloc(&pointer, size), "hipMalloc");
    memory = reinterpret_cast<uintptr_t>(pointer);
    return why;
  }
  std::string freeDevice(DevicePointer memory) override {
    return check(api_.hipFree(asPointer(memory)), "hipFree");
  }
  std::string allocatePinned(uint64_t size, void *&host,
                             DevicePointer &device) override {
    std::string why = check(
        api_.hipHostMalloc(&host, size, hipHostMallocMapped | hipHostMallocPortable),
        "hipHostMalloc");
    void *mapped = nullptr;
    if (why.empty())
      why = check(api_.hipHostGetDevicePointer(&mapped, host, 0),
                  "hipHostGetDevicePointer");
    device = reinterpret_cast<uintptr_t>(mapped);
    return why;
  }
  std::string freePinned(void *host) override {
    return check(api_.hipHostFree(host), "hipHostFree");
  }
  std::string allocateManaged(uint64_t size, DevicePointer &memory) override {
    void *pointer = nullptr;
    std::string why = check(
        api_.hipMallocManaged(&pointer, size, hipMemAttachGlobal),
        "hipMallocManaged");
    memory = reinterpret_cast<uintptr_t>(pointer);
    return why;
  }
  std::string freeManaged(DevicePointer memory) override {
    return check(api_.hipFree(asPointer(memory)), "hipFree");
  }
  std::string createStream(gpu::Stream &stream) override {
    hipStream_t created = nullptr;
    std::string why = check(
        api_.hipStreamCreateWithFlags(&created, hipStreamNonBlocking),
        "hipStreamCreateWithFlags");
    stream = created;
    return why;
  }
  std::string destroyStream(gpu::Stream stream) override {
    return check(api_.hipStreamDestroy(static_cast<hipStream_t>(stream)),
                 "hipStreamDestroy");
  }
  std::string synchronize(gpu::Stream stream) override {
    return check(api_.hipStreamSynchronize(static_cast<hipStream_t>(stream)),
                 "hipStreamSynchronize");
  }
  std::string copy(DevicePointer target, DevicePointer source, uint64_t size,
                   gpu::Stream stream) override {
    return check(api_.hipMemcpyAsync(asPointer(target), asPointer(source),
                                     size, hipMemcpyDefault,
                                     static_cast<hipStream_t>(stream)),
                 "hipMemcpyAsync");
  }
  std::string copyToDevice(DevicePointer target, const void *host,
                           uint64_t size, gpu::Stream stream) override {
    return check(api_.hipMemcpyAsync(asPointer(target), host, size,
                                     hipMemcpyHostToDevice,
                                     static_cast<hipStream_t>(stream)),
                 "hipMemcpyAsync");
  }
  std::string copyToHost(void *host, DevicePointer source, uint64_t size,
                         gpu::Stream stream) override {
    return check(api_.hipMemcpyAsync(host, asPointer(source), size,
                                     hipMemcpyDeviceToHost,
                                     static_cast<hipStream_t>(stream)),
                 "hipMemcpyAsync");
  }
  std::string fill(DevicePointer target, uint32_t pattern, int patternBytes,
                   uint64_t count, gpu::Stream stream) override {
    auto on = static_cast<hipStream_t>(stream);
    auto at = static_cast<hipDeviceptr_t>(asPointer(target));
    if (patternBytes == 1)
      return check(api_.hipMemsetD8Async(
                       at, static_cast<unsigned char>(pattern), count, on),
                   "hipMemsetD8Async");
    if (patternBytes == 2)
      return check(api_.hipMemsetD16Async(
                       at, static_cast<unsigned short>(pattern), count, on),
                   "hipMemsetD16Async");
    return check(api_.hipMemsetD32Async(at, static_cast<int>(pattern), count,
                                        on),
                 "hipMemsetD32Async");
  }
  std::string loadModule(const std::string &image,
                         gpu::Module &module) override {
    hipModule_t loaded = nullptr;
    std::string why =
        check(api_.hipModuleLoadData(&loaded, image.data()), "hipModuleLoadData");
    module = loaded;
    return why;
  }
  std::string unloadModule(gpu::Module module) override {
    return check(api_.hipModuleUnload(static_cast<hipModule_t>(module)),
                 "hipModuleUnload");
  }
  std::string function(gpu::Module module, const std::string &name,
                       gpu::Function &function) override {
    hipFunction_t found = nullptr;
    std::string why = check(
        api_.hipModuleGetFunction(&found, static_cast<hipModule_t>(module),
                                  name.c_str()),
        "hipModuleGetFunction");
    function = found;
    return why;
  }
  std::string launch(gpu::Function function, const uint32_t groups[3],
                     const uint32_t block[3], void **arguments,
                     gpu::Stream stream) override {
    return check(api_.hipModuleLaunchKernel(
                     static_cast<hipFunction_t>(function), groups[0],
                     groups[1], groups[2], block[0], block[1], block[2], 0,
                     static_cast<hipStream_t>(stream), arguments, nullptr),
                 "hipModuleLaunchKernel");
  }

private:
  explicit HipDriver(void *library) : library_(library) {}

  /// Every entry point, or `why` naming the first that is missing.
  bool resolve(std::string &why) {
    const char *missing = nullptr;
#define HETRT_HIP_BIND(name, ...)                                             \
  gpu::bindEntryPoint(library_, api_.name, #name, missing);
    HETRT_HIP_ENTRY_POINTS(HETRT_HIP_BIND)
#undef HETRT_HIP_BIND
    if (missing)
      why = std::string("hip: the HIP runtime has no ") + missing +
            " (install HIP 5 or later)";
    return !missing;
  }

  bool start(std::string &why) {
    int count = 0;
    // hipInit fails when the machine has no AMD GPU, as does the count.
    hipError_t initialized = api_.hipInit(0);
    hipError_t counted = initialized == hipSuccess
                             ? api_.hipGetDeviceCount(&count)
                             : initialized;
    if (counted != hipSuccess || count == 0) {
      why = "hip: the HIP runtime finds no AMD GPU" +
            (counted != hipSuccess ? " (" + check(counted, "hipInit") + ")"
                                   : std::string());
      return false;
    }
    int runtime = 0;
    if (api_.hipRuntimeGetVersion(&runtime) != hipSuccess)
      runtime = 0;
    version_ = "HIP " + std::to_string(runtime / 10000000) + "." +
               std::to_string(runtime / 100000 % 100);
    for (int i = 0; i < count; ++i) {
      hipDeviceProp_t properties = {};
      std::string failed = check(api_.hipGetDeviceProperties(&properties, i),
                                 "hipGetDeviceProperties");
      if (!failed.empty()) {
        why = "hip: GPU " + std::to_string(i) + " does not open: " + failed;
        return false;
      }
      gpu::GpuProperties gpu;
      gpu.name = properties.name;
      // "gfx942:sramecc+:xnack-": the chip is the part before the features.
      std::string arch = properties.gcnArchName;
      gpu.arch = arch.substr(0, arch.find(':'));
      gpu.memoryBytes = properties.totalGlobalMem;
      gpu.multiprocessors = properties.multiProcessorCount;
      // As on CUDA: managed memory the host may touch while kernels run.
      gpu.managedMemory = properties.concurrentManagedAccess != 0;
      devices_.push_back(std::move(gpu));
    }
    return true;
  }

  std::string check(hipError_t result, const char *call) const {
    if (result == hipSuccess)
      return "";
    const char *name = api_.hipGetErrorName ? api_.hipGetErrorName(result)
                                            : nullptr;
    const char *words = api_.hipGetErrorString
                            ? api_.hipGetErrorString(result)
                            : nullptr;
    return std::string(call) + ": " +
           (name ? std::string(name)
                 : "HIP error " + std::to_string(static_cast<int>(result))) +
           (words && (!name || std::string(words) != name)
                ? std::string(" (") + words + ")"
                : "");
  }

  void *library_;
  Api api_;
  std::string version_;
  std::vector<gpu::GpuProperties> devices_;
};

} // namespace

std::vector<std::shared_ptr<hal::Device>>
enumerateHipDevices(std::vector<std::string> &unavailable) {
  std::string why;
  std::shared_ptr<HipDriver> driver = HipDriver::open(why);
  if (!driver) {
    unavailable.push_back(why);
    return {};
  }
  return gpu::createGpuDevices(driver);
}

} // namespace hetrt::hip
