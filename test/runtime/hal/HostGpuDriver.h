// A GPU driver over host memory, for tests: the CUDA and HIP back ends' shared
// device layer (runtime/backends/gpu) runs the conformance suite against it
// on machines without a GPU. Memory is the process's own (a "device
// pointer" is an address). Like a GPU's stream, a stream runs its copies
// and fills only later, here when it is synchronized, reading their sources
// then: a layer that reuses memory a queued copy still reads fails the
// tests. Kernels cannot be launched.
#ifndef HETRT_TEST_HAL_HOSTGPUDRIVER_H
#define HETRT_TEST_HAL_HOSTGPUDRIVER_H

#include "runtime/backends/gpu/GpuDriver.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>

namespace hetrt::test {

class HostGpuDriver final : public gpu::GpuDriver {
public:
  /// A GPU of `memoryBytes` device memory, with managed memory where
  /// `managed` (which counts against the device's memory like its own).
  explicit HostGpuDriver(uint64_t memoryBytes, bool managed = false) {
    devices_.push_back({"host test GPU", "sm_90", memoryBytes, 1, managed});
  }
  const char *kind() const override { return "testgpu"; }
  std::string version() const override { return "host test driver"; }
  const std::vector<gpu::GpuProperties> &devices() const override {
    return devices_;
  }
  std::string makeCurrent(int) override { return ""; }
  std::string freeMemory(int, uint64_t &freeBytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    freeBytes = devices_[0].memoryBytes - used_;
    return "";
  }
  std::string allocateDevice(uint64_t size, gpu::DevicePointer &memory) override {
    void *bytes = std::malloc(size + sizeof(uint64_t));
    if (!bytes)
      return "out of host memory";
    std::memcpy(bytes, &size, sizeof(uint64_t));
    std::lock_guard<std::mutex> lock(mutex_);
    used_ += size;
    memory = reinterpret_cast<uintptr_t>(static_cast<char *>(bytes) +
                                         sizeof(uint64_t));
    return "";
  }
  std::string freeDevice(gpu::DevicePointer memory) override {
    char *bytes = reinterpret_cast<char *>(memory) - sizeof(uint64_t);
    uint64_t size;
    std::memcpy(&size, bytes, sizeof(uint64_t));
    std::free(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    used_ -= size;
    return "";
  }
  std::string allocateManaged(uint64_t size,
                              gpu::DevicePointer &memory) override {
    return allocateDevice(size, memory);
  }
  std::string freeManaged(gpu::DevicePointer memory) override {
    return freeDevice(memory);
  }
  std::string allocatePinned(uint64_t size, void *&host,
                             gpu::DevicePointer &device) override {
    host = std::malloc(size);
    device = reinterpret_cast<uintptr_t>(host);
    return host ? "" : "out of host memory";
  }
  std::string freePinned(void *host) override {
    std::free(host);
    return "";
  }
  /// A stream is the work queued on it since its last synchronization.
  struct Work {
    std::vector<std::function<void()>> pending;
  };
  std::string createStream(gpu::Stream &stream) override {
    stream = new Work();
    return "";
  }
  std::string destroyStream(gpu::Stream stream) override {
    delete static_cast<Work *>(stream);
    return "";
  }
  std::string synchronize(gpu::Stream stream) override {
    auto *work = static_cast<Work *>(stream);
    for (std::function<void()> &step : work->pending)
      step();
    work->pending.clear();
    return "";
  }
  std::string copy(gpu::DevicePointer target, gpu::DevicePointer source,
                   uint64_t size, gpu::Stream stream) override {
    return queue(stream, [=] {
      std::memmove(reinterpret_cast<void *>(target),
                   reinterpret_cast<const void *>(source), size);
    });
  }
  std::string copyToDevice(gpu::DevicePointer target, const void *host,
                           uint64_t size, gpu::Stream stream) override {
    return queue(stream, [=] {
      std::memcpy(reinterpret_cast<void *>(target), host, size);
    });
  }
  std::string copyToHost(void *host, gpu::DevicePointer source, uint64_t size,
                         gpu::Stream stream) override {
    return queue(stream, [=] {
      std::memcpy(host, reinterpret_cast<const void *>(source), size);
    });
  }
  std::string fill(gpu::DevicePointer target, uint32_t pattern,
                   int patternBytes, uint64_t count,
                   gpu::Stream stream) override {
    return queue(stream, [=] {
      auto *at = reinterpret_cast<char *>(target);
      for (uint64_t i = 0; i < count; ++i)
        std::memcpy(at + i * patternBytes, &pattern, patternBytes);
    });
  }
  std::string loadModule(const std::string &, gpu::Module &) override {
    return "the host test driver loads no modules";
  }
  std::string unloadModule(gpu::Module) override { return ""; }
  std::string function(gpu::Module, const std::string &,
                       gpu::Function &) override {
    return "the host test driver has no kernels";
  }
  std::string launch(gpu::Function, const uint32_t *, const uint32_t *,
                     void **, gpu::Stream) override {
    return "the host test driver launches no kernels";
  }

private:
  static std::string queue(gpu::Stream stream, std::function<void()> step) {
    static_cast<Work *>(stream)->pending.push_back(std::move(step));
    return "";
  }

  std::vector<gpu::GpuProperties> devices_;
  std::mutex mutex_;
  uint64_t used_ = 0;
};

} // namespace hetrt::test

#endif // HETRT_TEST_HAL_HOSTGPUDRIVER_H
