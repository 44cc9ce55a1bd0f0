// The CUDA back end: NVIDIA's driver API (libcuda.so.1), opened with dlopen
// so the runtime runs on machines without it, behind the GPU driver
// interface. Only the driver's stable C ABI is used, declared here; the
// runtime needs no CUDA headers to build.
#include "runtime/backends/cuda/CudaDriver.h"

#include "runtime/backends/gpu/GpuDevice.h"

#include <dlfcn.h>

namespace hetrt::cuda {

namespace {

using gpu::DevicePointer;
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
constexpr CUresult kSuccess = 0;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
constexpr int kMultiprocessorCount = 16;
constexpr int kConcurrentManagedAccess = 89;
constexpr unsigned kMemAttachGlobal = 0x01;
constexpr unsigned kHostAllocPortable = 0x01;
constexpr unsigned kHostAllocDeviceMap = 0x02;
constexpr unsigned kStreamNonBlocking = 0x01;

/// The driver entry points hetc calls, as X(name, type), resolved by name
/// (the _v2 names are the ones cuda.h maps the plain names to).
#define HETRT_CUDA_ENTRY_POINTS(X) \
  X(cuInit, CUresult (*)(unsigned)) \
  X(cuDriverGetVersion, CUresult (*)(int *)) \
  X(cuDeviceGetCount, CUresult (*)(int *)) \
  X(cuDeviceGet, CUresult (*)(CUdevice *, int)) \
  X(cuDeviceGetName, CUresult (*)(char *, int, CUdevice)) \
  X(cuDeviceTotalMem_v2, CUresult (*)(size_t *, CUdevice)) \
  X(cuDeviceGetAttribute, CUresult (*)(int *, int, CUdevice)) \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext *, CUdevice)) \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext)) \
  X(cuMemGetInfo_v2, CUresult (*)(size_t *, size_t *)) \
  X(cuMemAlloc_v2, CUresult (*)(DevicePointer *, size_t)) \
  X(cuMemFree_v2, CUresult (*)(DevicePointer)) \
  X(cuMemAllocManaged, CUresult (*)(DevicePointer *, size_t, unsigned)) \
  X(cuMemHostAlloc, CUresult (*)(void **, size_t, unsigned)) \
  X(cuMemFreeHost, CUresult (*)(void *)) \
  X(cuMemHostGetDevicePointer_v2, CUresult (*)(DevicePointer *, void *, unsigned)) \
  X(cuStreamCreate, CUresult (*)(void **, unsigned)) \
  X(cuStreamDestroy_v2, CUresult (*)(void *)) \
  X(cuStreamSynchronize, CUresult (*)(void *)) \
  X(cuMemcpyAsync, CUresult (*)(DevicePointer, DevicePointer, size_t, void *)) \
  X(cuMemcpyHtoDAsync_v2, CUresult (*)(DevicePointer, const void *, size_t, void *)) \
  X(cuMemcpyDtoHAsync_v2, CUresult (*)(void *, DevicePointer, size_t, void *)) \
  X(cuMemsetD8Async, CUresult (*)(DevicePointer, unsigned char, size_t, void *)) \
  X(cuMemsetD16Async, CUresult (*)(DevicePointer, unsigned short, size_t, void *)) \
  X(cuMemsetD32Async, CUresult (*)(DevicePointer, unsigned, size_t, void *)) \
  X(cuModuleLoadData, CUresult (*)(void **, const void *)) \
  X(cuModuleUnload, CUresult (*)(void *)) \
  X(cuModuleGetFunction, CUresult (*)(void **, void *, const char *)) \
  X(cuLaunchKernel, CUresult (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **)) \
  X(cuGetErrorName, CUresult (*)(CUresult, const char **)) \
  X(cuGetErrorString, CUresult (*)(CUresult, const char **))

struct Api {
#define HETRT_CUDA_FIELD(name, ...) gpu::EntryPoint<__VA_ARGS__> name = nullptr;
  HETRT_CUDA_ENTRY_POINTS(HETRT_CUDA_FIELD)
#undef HETRT_CUDA_FIELD
};

class CudaDriver final : public gpu::GpuDriver {
public:
  /// Opens the driver and finds its GPUs; null with `why` when it cannot.
  static std::shared_ptr<CudaDriver> open(std::string &why) {
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *message = dlerror();
      why = std::string("cuda: no NVIDIA driver (libcuda.so.1 does not load: ") +
            (message ? message : "not found") + ")";
      return nullptr;
    }
    auto driver = std::shared_ptr<CudaDriver>(new CudaDriver(library));
    if (!driver->resolve(why) || !driver->start(why))
      return nullptr;
    return driver;
  }

  const char *kind() const override { return "cuda"; }
  std::string version() const override { return version_; }
  const std::vector<gpu::GpuProperties> &devices() const override {
    return devices_;
  }

  std::string makeCurrent(int index) override {
    return check(api_.cuCtxSetCurrent(contexts_[index]), "cuCtxSetCurrent");
  }
  std::string freeMemory(int, uint64_t &freeBytes) override {
    size_t free = 0, total = 0;
    std::string why = check(api_.cuMemGetInfo_v2(&free, &total), "cuMemGetInfo");
    freeBytes = free;
    return why;
  }
  std::string allocateDevice(uint64_t size, DevicePointer &memory) override {
    return check(api_.cuMemAlloc_v2(&memory, size), "cuMemAlloc");
  }
  std::string freeDevice(DevicePointer memory) override {
    return check(api_.cuMemFree_v2(memory), "cuMemFree");
  }
  std::string allocatePinned(uint64_t size, void *&host,
                             DevicePointer &device) override {
    std::string why = check(
        api_.cuMemHostAlloc(&host, size, kHostAllocPortable | kHostAllocDeviceMap),
        "cuMemHostAlloc");
    if (why.empty())
      why = check(api_.cuMemHostGetDevicePointer_v2(&device, host, 0),
                  "cuMemHostGetDevicePointer");
    return why;
  }
  std::string freePinned(void *host) override {
    return check(api_.cuMemFreeHost(host), "cuMemFreeHost");
  }
  std::string allocateManaged(uint64_t size, DevicePointer &memory) override {
    return check(api_.cuMemAllocManaged(&memory, size, kMemAttachGlobal),
                 "cuMemAllocManaged");
  }
  std::string freeManaged(DevicePointer memory) override {
    return check(api_.cuMemFree_v2(memory), "cuMemFree");
  }
  std::string createStream(gpu::Stream &stream) override {
    return check(api_.cuStreamCreate(&stream, kStreamNonBlocking),
                 "cuStreamCreate");
  }
  std::string destroyStream(gpu::Stream stream) override {
    return check(api_.cuStreamDestroy_v2(stream), "cuStreamDestroy");
  }
  std::string synchronize(gpu::Stream stream) override {
    return check(api_.cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  std::string copy(DevicePointer target, DevicePointer source, uint64_t size,
                   gpu::Stream stream) override {
    return check(api_.cuMemcpyAsync(target, source, size, stream),
                 "cuMemcpyAsync");
  }
  std::string copyToDevice(DevicePointer target, const void *host,
                           uint64_t size, gpu::Stream stream) override {
    return check(api_.cuMemcpyHtoDAsync_v2(target, host, size, stream),
                 "cuMemcpyHtoDAsync");
  }
  std::string copyToHost(void *host, DevicePointer source, uint64_t size,
                         gpu::Stream stream) override {
    return check(api_.cuMemcpyDtoHAsync_v2(host, source, size, stream),
                 "cuMemcpyDtoHAsync");
  }
  std::string fill(DevicePointer target, uint32_t pattern, int patternBytes,
                   uint64_t count, gpu::Stream stream) override {
    if (patternBytes == 1)
      return check(api_.cuMemsetD8Async(target,
                                        static_cast<unsigned char>(pattern),
                                        count, stream),
                   "cuMemsetD8Async");
    if (patternBytes == 2)
      return check(api_.cuMemsetD16Async(target,
                                         static_cast<unsigned short>(pattern),
                                         count, stream),
                   "cuMemsetD16Async");
    return check(api_.cuMemsetD32Async(target, pattern, count, stream),
                 "cuMemsetD32Async");
  }
  std::string loadModule(const std::string &image,
                         gpu::Module &module) override {
    // cuModuleLoadData reads PTX as a NUL-terminated string.
    std::string terminated = image;
    terminated.push_back('\0');
    return check(api_.cuModuleLoadData(&module, terminated.data()),
                 "cuModuleLoadData");
  }
  std::string unloadModule(gpu::Module module) override {
    return check(api_.cuModuleUnload(module), "cuModuleUnload");
  }
  std::string function(gpu::Module module, const std::string &name,
                       gpu::Function &function) override {
    return check(api_.cuModuleGetFunction(&function, module, name.c_str()),
                 "cuModuleGetFunction");
  }
  std::string launch(gpu::Function function, const uint32_t groups[3],
                     const uint32_t block[3], void **arguments,
                     gpu::Stream stream) override {
    return check(api_.cuLaunchKernel(function, groups[0], groups[1], groups[2],
                                     block[0], block[1], block[2], 0, stream,
                                     arguments, nullptr),
                 "cuLaunchKernel");
  }

private:
  explicit CudaDriver(void *library) : library_(library) {}

  /// Every entry point, or `why` naming the first that is missing.
  bool resolve(std::string &why) {
    const char *missing = nullptr;
#define HETRT_CUDA_BIND(name, ...)                                            \
  gpu::bindEntryPoint(library_, api_.name, #name, missing);
    HETRT_CUDA_ENTRY_POINTS(HETRT_CUDA_BIND)
#undef HETRT_CUDA_BIND
    if (missing)
      why = std::string("cuda: the driver has no ") + missing +
            " (update the NVIDIA driver)";
    return !missing;
  }

  /// Initializes the driver and retains each GPU's primary context.
  bool start(std::string &why) {
    why = check(api_.cuInit(0), "cuInit");
    int count = 0;
    if (why.empty())
      why = check(api_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (!why.empty()) {
      why = "cuda: the NVIDIA driver does not start: " + why;
      return false;
    }
    int driverVersion = 0;
    api_.cuDriverGetVersion(&driverVersion);
    version_ = "CUDA driver " + std::to_string(driverVersion / 1000) + "." +
               std::to_string(driverVersion % 1000 / 10);
    for (int i = 0; i < count; ++i) {
      CUdevice device = 0;
      char name[256] = {};
      size_t memory = 0;
      int major = 0, minor = 0, units = 0, managed = 0;
      CUcontext context = nullptr;
      std::string failed = check(api_.cuDeviceGet(&device, i), "cuDeviceGet");
      if (failed.empty())
        failed = check(api_.cuDeviceGetName(name, sizeof(name) - 1, device),
                       "cuDeviceGetName");
      if (failed.empty())
        failed = check(api_.cuDeviceTotalMem_v2(&memory, device),
                       "cuDeviceTotalMem");
      if (failed.empty())
        failed = check(api_.cuDeviceGetAttribute(
                           &major, kComputeCapabilityMajor, device),
                       "cuDeviceGetAttribute");
      if (failed.empty())
        failed = check(api_.cuDeviceGetAttribute(
                           &minor, kComputeCapabilityMinor, device),
                       "cuDeviceGetAttribute");
      if (failed.empty())
        failed = check(api_.cuDeviceGetAttribute(&units, kMultiprocessorCount,
                                                 device),
                       "cuDeviceGetAttribute");
      // Managed memory the device reads beside the host: without concurrent
      // access (Windows, older GPUs) the host may not touch it while kernels
      // run, which the device layer's queues do not promise.
      if (failed.empty())
        failed = check(api_.cuDeviceGetAttribute(
                           &managed, kConcurrentManagedAccess, device),
                       "cuDeviceGetAttribute");
      if (failed.empty())
        failed = check(api_.cuDevicePrimaryCtxRetain(&context, device),
                       "cuDevicePrimaryCtxRetain");
      if (!failed.empty()) {
        why = "cuda: GPU " + std::to_string(i) + " does not open: " + failed;
        return false;
      }
      gpu::GpuProperties properties;
      properties.name = name;
      properties.arch = "sm_" + std::to_string(major * 10 + minor);
      properties.memoryBytes = memory;
      properties.multiprocessors = units;
      properties.managedMemory = managed != 0;
      devices_.push_back(std::move(properties));
      contexts_.push_back(context);
    }
    if (devices_.empty()) {
      why = "cuda: the NVIDIA driver finds no GPU";
      return false;
    }
    return true;
  }

  /// "" on success, else the call and the driver's name and words for
  /// `result`.
  std::string check(CUresult result, const char *call) const {
    if (result == kSuccess)
      return "";
    const char *name = nullptr, *words = nullptr;
    if (api_.cuGetErrorName)
      api_.cuGetErrorName(result, &name);
    if (api_.cuGetErrorString)
      api_.cuGetErrorString(result, &words);
    return std::string(call) + ": " +
           (name ? std::string(name) : "CUDA error " + std::to_string(result)) +
           (words ? std::string(" (") + words + ")" : "");
  }

  void *library_;
  Api api_;
  std::string version_;
  std::vector<gpu::GpuProperties> devices_;
  std::vector<CUcontext> contexts_;
};

} // namespace

std::vector<std::shared_ptr<hal::Device>>
enumerateCudaDevices(std::vector<std::string> &unavailable) {
  std::string why;
  std::shared_ptr<CudaDriver> driver = CudaDriver::open(why);
  if (!driver) {
    unavailable.push_back(why);
    return {};
  }
  return gpu::createGpuDevices(driver);
}

} // namespace hetrt::cuda
