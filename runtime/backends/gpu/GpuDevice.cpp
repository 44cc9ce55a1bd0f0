// The device layer on a GPU driver (see GpuDevice.h).
#include "runtime/backends/gpu/GpuDevice.h"

#include "runtime/hal/SerialQueue.h"

#include <cstring>
#include <unistd.h>

namespace hetrt::gpu {

namespace {

using core::Failure;
using hal::Error;
using hal::failWith;

uint64_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize)
             : 0;
}

/// A driver failure as a device-layer error naming the device and the call.
bool driverFailed(Error &error, const std::string &device,
                  const std::string &what, const std::string &why) {
  return failWith(error, Failure::Unavailable,
                  device + ": " + what + " failed: " + why);
}

class GpuBuffer final : public hal::Buffer {
public:
  GpuBuffer(std::shared_ptr<GpuDriver> driver, int device, uint64_t size,
            int space, DevicePointer pointer, void *host)
      : Buffer(size, space), driver_(std::move(driver)), device_(device),
        pointer_(pointer), host_(host) {}
  ~GpuBuffer() override {
    // Freeing needs the device current on this thread.
    driver_->makeCurrent(device_);
    if (memorySpace() == kManaged)
      driver_->freeManaged(pointer_);
    else if (host_)
      driver_->freePinned(host_);
    else
      driver_->freeDevice(pointer_);
  }
  void *hostPointer() override { return host_; }
  DevicePointer pointer() const { return pointer_; }
  int device() const { return device_; }
  const GpuDriver *driver() const { return driver_.get(); }

private:
  std::shared_ptr<GpuDriver> driver_;
  int device_;
  DevicePointer pointer_;
  void *host_;
};

class GpuExecutable final : public hal::Executable {
public:
  GpuExecutable(std::shared_ptr<GpuDriver> driver, int device, Module module,
                std::vector<hal::KernelSignature> kernels,
                std::vector<Function> functions)
      : Executable(std::move(kernels)), driver_(std::move(driver)),
        device_(device), module_(module), functions_(std::move(functions)) {}
  ~GpuExecutable() override {
    driver_->makeCurrent(device_);
    driver_->unloadModule(module_);
  }
  Function function(int kernel) const { return functions_[kernel]; }
  int device() const { return device_; }
  const GpuDriver *driver() const { return driver_.get(); }

private:
  std::shared_ptr<GpuDriver> driver_;
  int device_;
  Module module_;
  std::vector<Function> functions_;
};

/// How a kernel lowered from the gpu dialect takes a buffer: a rank-1 memref
/// descriptor, five arguments.
struct MemrefDescriptor {
  DevicePointer allocated;
  DevicePointer aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

class GpuQueue final : public hal::SerialQueue {
public:
  GpuQueue(std::shared_ptr<GpuDriver> driver, int device, std::string name,
           Stream stream)
      : driver_(std::move(driver)), device_(device), name_(std::move(name)),
        stream_(stream) {}
  ~GpuQueue() override {
    drain();
    driver_->makeCurrent(device_);
    driver_->destroyStream(stream_);
    if (staging_)
      driver_->freePinned(staging_);
  }

  bool fill(hal::Buffer &buffer, uint64_t offset, uint64_t size,
            uint32_t pattern, int patternBytes, Error &error) override {
    GpuBuffer *target = own(buffer, error);
    if (!target)
      return false;
    if (!hal::checkFillPattern(offset, size, patternBytes, error) ||
        !hal::checkRange("fill", offset, size, buffer.size(), error))
      return false;
    DevicePointer at = target->pointer() + offset;
    submitDriverWork("fill", [=](GpuDriver &driver) {
      return driver.fill(at, pattern, patternBytes, size / patternBytes,
                         stream_);
    });
    return true;
  }

  bool copy(hal::Buffer &source, uint64_t sourceOffset, hal::Buffer &target,
            uint64_t targetOffset, uint64_t size, Error &error) override {
    GpuBuffer *from = own(source, error);
    GpuBuffer *to = from ? own(target, error) : nullptr;
    if (!to || !hal::checkCopy(source, sourceOffset, target, targetOffset,
                               size, error))
      return false;
    DevicePointer src = from->pointer() + sourceOffset;
    DevicePointer dst = to->pointer() + targetOffset;
    submitDriverWork("copy", [=](GpuDriver &driver) {
      return driver.copy(dst, src, size, stream_);
    });
    return true;
  }

  bool write(const void *host, hal::Buffer &target, uint64_t targetOffset,
             uint64_t size, Error &error) override {
    GpuBuffer *to = own(target, error);
    if (!to || !hal::checkHostPointer("write", host, size, error) ||
        !hal::checkRange("write", targetOffset, size, target.size(), error))
      return false;
    DevicePointer dst = to->pointer() + targetOffset;
    submitDriverWork("write", [=](GpuDriver &driver) {
      return stagedWrite(driver, dst, host, size);
    });
    return true;
  }

  bool read(hal::Buffer &source, uint64_t sourceOffset, void *host,
            uint64_t size, Error &error) override {
    GpuBuffer *from = own(source, error);
    if (!from || !hal::checkHostPointer("read", host, size, error) ||
        !hal::checkRange("read", sourceOffset, size, source.size(), error))
      return false;
    DevicePointer src = from->pointer() + sourceOffset;
    // The bytes are the host's once the work is done: the copy is waited
    // for before the queue moves on.
    submitDriverWork("read", [=](GpuDriver &driver) {
      std::string why = driver.copyToHost(host, src, size, stream_);
      return why.empty() ? synchronize(driver) : why;
    });
    return true;
  }

  bool dispatch(hal::Executable &executable, int kernel,
                const uint32_t groups[3],
                const std::vector<hal::Buffer *> &bindings,
                const std::string &pushConstants, Error &error) override {
    auto *code = dynamic_cast<GpuExecutable *>(&executable);
    if (!code || code->driver() != driver_.get() || code->device() != device_)
      return failWith(error, Failure::InvalidInput,
                      "dispatch: the executable was not loaded on " + name_);
    if (kernel < 0 || kernel >= static_cast<int>(code->kernels().size()))
      return failWith(error, Failure::InvalidInput,
                      "dispatch: no kernel " + std::to_string(kernel));
    const hal::KernelSignature &signature = code->kernels()[kernel];
    if (static_cast<int>(bindings.size()) != signature.bindings)
      return failWith(error, Failure::InvalidInput,
                      "dispatch: " + signature.entryPoint + " takes " +
                          std::to_string(signature.bindings) +
                          " buffers, not " + std::to_string(bindings.size()));
    if (!pushConstants.empty())
      return failWith(error, Failure::InvalidInput,
                      "dispatch: " + signature.entryPoint +
                          " takes no push constants (its parameters are a "
                          "buffer)");
    // CUDA and HIP both allow 2^31 - 1 blocks along x and 65535 along y, z.
    const uint64_t limits[3] = {0x7fffffffu, 65535, 65535};
    for (int d = 0; d < 3; ++d)
      if (groups[d] < 1 || groups[d] > limits[d])
        return failWith(error, Failure::InvalidInput,
                        "dispatch: " + signature.entryPoint + " over " +
                            std::to_string(groups[d]) +
                            " workgroups along axis " + std::to_string(d) +
                            "; the GPU takes 1 to " +
                            std::to_string(limits[d]));
    std::vector<MemrefDescriptor> descriptors;
    for (hal::Buffer *binding : bindings) {
      GpuBuffer *buffer = binding ? own(*binding, error) : nullptr;
      if (!buffer)
        return binding ? false
                       : failWith(error, Failure::InvalidInput,
                                  "dispatch: a binding of " +
                                      signature.entryPoint + " is null");
      descriptors.push_back({buffer->pointer(), buffer->pointer(), 0,
                             static_cast<int64_t>(buffer->size()), 1});
    }
    Function function = code->function(kernel);
    uint32_t grid[3] = {groups[0], groups[1], groups[2]};
    uint32_t block[3] = {signature.workgroupSize[0], signature.workgroupSize[1],
                         signature.workgroupSize[2]};
    submitDriverWork(
        "launching " + signature.entryPoint,
        [=, descriptors = std::move(descriptors)](GpuDriver &driver) mutable {
          std::vector<void *> arguments;
          for (MemrefDescriptor &descriptor : descriptors)
            for (void *field :
                 {static_cast<void *>(&descriptor.allocated),
                  static_cast<void *>(&descriptor.aligned),
                  static_cast<void *>(&descriptor.offset),
                  static_cast<void *>(&descriptor.size),
                  static_cast<void *>(&descriptor.stride)})
              arguments.push_back(field);
          return driver.launch(function, grid, block, arguments.data(),
                               stream_);
        });
    return true;
  }

  bool signal(hal::Event &event, uint64_t value, Error &error) override {
    // The host event may be reached only once the GPU has done the work.
    submitDriverWork("synchronizing",
                     [=](GpuDriver &driver) { return synchronize(driver); });
    return SerialQueue::signal(event, value, error);
  }

  bool finish(Error &error) override {
    submitDriverWork("synchronizing",
                     [=](GpuDriver &driver) { return synchronize(driver); });
    return SerialQueue::finish(error);
  }

private:
  /// Pinned staging for small writes, and the largest write it takes: a
  /// program writes a few parameters before each dispatch, and a copy from
  /// pageable memory costs a staging round trip in the driver each time,
  /// while one from pinned memory is queued like a kernel.
  static constexpr uint64_t kStagingBytes = uint64_t(1) << 20;
  static constexpr uint64_t kStagedWriteBytes = uint64_t(64) << 10;

  /// Waits for the stream; every staged write has then landed, so the
  /// staging memory is free again. Runs on the queue's thread.
  std::string synchronize(GpuDriver &driver) {
    std::string why = driver.synchronize(stream_);
    if (why.empty())
      stagingUsed_ = 0;
    return why;
  }

  /// Host bytes to the device: small ones through the queue's pinned
  /// staging memory (taken in order, freed at the next synchronization,
  /// waited for when full), larger ones directly. Runs on the queue's thread.
  std::string stagedWrite(GpuDriver &driver, DevicePointer target,
                          const void *host, uint64_t size) {
    if (size > kStagedWriteBytes)
      return driver.copyToDevice(target, host, size, stream_);
    if (!staging_) {
      DevicePointer mapped = 0;
      std::string why = driver.allocatePinned(kStagingBytes, staging_, mapped);
      if (!why.empty()) {
        staging_ = nullptr;
        return driver.copyToDevice(target, host, size, stream_);
      }
    }
    // 16-byte slots keep every staged copy aligned for the DMA engines.
    uint64_t slot = (size + 15) & ~uint64_t(15);
    if (stagingUsed_ + slot > kStagingBytes) {
      std::string why = synchronize(driver);
      if (!why.empty())
        return why;
    }
    char *at = static_cast<char *>(staging_) + stagingUsed_;
    std::memcpy(at, host, size);
    stagingUsed_ += slot;
    return driver.copyToDevice(target, at, size, stream_);
  }

  /// `buffer` as one of this device's buffers, or an error.
  GpuBuffer *own(hal::Buffer &buffer, Error &error) {
    auto *mine = dynamic_cast<GpuBuffer *>(&buffer);
    if (!mine || mine->driver() != driver_.get() || mine->device() != device_) {
      failWith(error, Failure::InvalidInput,
               "the buffer belongs to another device than " + name_ +
                   "; move it with a transfer between the devices' queues "
                   "first");
      return nullptr;
    }
    return mine;
  }

  /// Queues a driver call on this queue's thread with the device current.
  template <typename Call>
  void submitDriverWork(std::string what, Call call) {
    submit([this, what = std::move(what),
            call = std::move(call)](Error &error) mutable {
      std::string why = driver_->makeCurrent(device_);
      if (why.empty())
        why = call(*driver_);
      return why.empty() || driverFailed(error, name_, what, why);
    });
  }

  std::shared_ptr<GpuDriver> driver_;
  int device_;
  std::string name_;
  Stream stream_;
  /// Used on the queue's thread only.
  void *staging_ = nullptr;
  uint64_t stagingUsed_ = 0;
};

class GpuDevice final : public hal::Device {
public:
  GpuDevice(std::shared_ptr<GpuDriver> driver, int index, hal::DeviceInfo info)
      : driver_(std::move(driver)), index_(index), info_(std::move(info)) {}

  const hal::DeviceInfo &info() const override { return info_; }

  std::shared_ptr<hal::Buffer> allocate(int memorySpace, uint64_t size,
                                        Error &error) override {
    if (memorySpace < 0 ||
        static_cast<size_t>(memorySpace) >= info_.memories.size()) {
      failWith(error, Failure::InvalidInput,
               info_.name + " has memory spaces 0 (device-local), 1 "
                            "(host-pinned)" +
                   (info_.memories.size() > kManaged ? ", 2 (managed)" : "") +
                   ", not " + std::to_string(memorySpace));
      return nullptr;
    }
    std::string why = driver_->makeCurrent(index_);
    // Zero-byte buffers are valid; the driver is asked for one byte.
    uint64_t bytes = size ? size : 1;
    // Managed memory never asks for more than the device has free: its
    // pages live in the device's memory while the device uses them.
    if (why.empty() && memorySpace != kHostPinned) {
      uint64_t free = 0;
      why = driver_->freeMemory(index_, free);
      if (why.empty() && bytes > free) {
        failWith(error, Failure::OutOfMemory,
                 info_.name + ": " + std::to_string(size) + " bytes of " +
                     info_.memories[memorySpace].name +
                     " memory asked for, " + std::to_string(free) +
                     " free on the device");
        return nullptr;
      }
    }
    DevicePointer pointer = 0;
    void *host = nullptr;
    if (why.empty()) {
      if (memorySpace == kDeviceLocal) {
        why = driver_->allocateDevice(bytes, pointer);
      } else if (memorySpace == kHostPinned) {
        why = driver_->allocatePinned(bytes, host, pointer);
      } else {
        why = driver_->allocateManaged(bytes, pointer);
        host = reinterpret_cast<void *>(static_cast<uintptr_t>(pointer));
      }
    }
    if (!why.empty()) {
      failWith(error, Failure::OutOfMemory,
               info_.name + ": allocating " + std::to_string(size) + " bytes of " +
                   info_.memories[memorySpace].name + " failed: " + why);
      return nullptr;
    }
    return std::make_shared<GpuBuffer>(driver_, index_, size, memorySpace,
                                       pointer, host);
  }

  std::unique_ptr<hal::Queue> createQueue(Error &error) override {
    Stream stream = nullptr;
    std::string why = driver_->makeCurrent(index_);
    if (why.empty())
      why = driver_->createStream(stream);
    if (!why.empty()) {
      driverFailed(error, info_.name, "creating a stream", why);
      return nullptr;
    }
    return std::make_unique<GpuQueue>(driver_, index_, info_.name, stream);
  }

  std::shared_ptr<hal::Event> createEvent(uint64_t initialValue,
                                          Error &) override {
    return std::make_shared<hal::HostEvent>(initialValue);
  }

  bool runs(hal::ExecutableFormat format) const override {
    return format == hal::ExecutableFormat::GpuModule;
  }

  std::shared_ptr<hal::Executable>
  loadExecutable(hal::ExecutableFormat format, const std::string &code,
                 std::vector<hal::KernelSignature> kernels,
                 Error &error) override {
    if (format != hal::ExecutableFormat::GpuModule) {
      failWith(error, Failure::Unsupported,
               info_.name + " runs GPU modules (" + driver_->kind() +
                   "), not this executable format");
      return nullptr;
    }
    for (const hal::KernelSignature &kernel : kernels) {
      uint64_t threads = uint64_t(kernel.workgroupSize[0]) *
                         kernel.workgroupSize[1] * kernel.workgroupSize[2];
      if (threads < 1 || threads > 1024 || kernel.pushConstantBytes != 0)
        return failWith(error, Failure::InvalidInput,
                        info_.name + ": kernel " + kernel.entryPoint +
                            " has a workgroup of " + std::to_string(threads) +
                            " threads or push constants; GPU modules take "
                            "1 to 1024 threads and none"),
               nullptr;
    }
    std::string why = driver_->makeCurrent(index_);
    Module module = nullptr;
    if (why.empty())
      why = driver_->loadModule(code, module);
    if (!why.empty()) {
      failWith(error, Failure::InvalidInput,
               info_.name + " (" + info_.arch + ") cannot load the module: " +
                   why);
      return nullptr;
    }
    std::vector<Function> functions;
    for (const hal::KernelSignature &kernel : kernels) {
      Function function = nullptr;
      why = driver_->function(module, kernel.entryPoint, function);
      if (!why.empty()) {
        driver_->unloadModule(module);
        failWith(error, Failure::InvalidInput,
                 info_.name + ": the module has no kernel " +
                     kernel.entryPoint + " (" + why + ")");
        return nullptr;
      }
      functions.push_back(function);
    }
    return std::make_shared<GpuExecutable>(driver_, index_, module,
                                           std::move(kernels),
                                           std::move(functions));
  }

private:
  std::shared_ptr<GpuDriver> driver_;
  int index_;
  hal::DeviceInfo info_;
};

} // namespace

std::vector<std::shared_ptr<hal::Device>>
createGpuDevices(const std::shared_ptr<GpuDriver> &driver) {
  std::vector<std::shared_ptr<hal::Device>> devices;
  const std::vector<GpuProperties> &found = driver->devices();
  for (size_t i = 0; i < found.size(); ++i) {
    const GpuProperties &gpu = found[i];
    hal::DeviceInfo info;
    info.name = driver->kind() + std::to_string(i);
    info.kind = driver->kind();
    info.arch = gpu.arch;
    info.description = gpu.name + " (" + gpu.arch + ", " +
                       std::to_string(gpu.multiprocessors) + " compute units, " +
                       std::to_string(gpu.memoryBytes >> 20) + " MiB; " +
                       driver->version() + ")";
    info.memories.push_back({"device-local", gpu.memoryBytes, false});
    info.memories.push_back({"host-pinned", hostMemoryBytes(), true});
    if (gpu.managedMemory)
      info.memories.push_back({"managed", gpu.memoryBytes, true});
    devices.push_back(
        std::make_shared<GpuDevice>(driver, static_cast<int>(i), std::move(info)));
  }
  return devices;
}

} // namespace hetrt::gpu
