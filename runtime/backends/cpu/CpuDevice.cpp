// The CPU device: buffers from aligned host allocations; its queues are
// serial queues (hal/SerialQueue.h) whose work is plain memory operations.
#include "runtime/backends/cpu/CpuDevice.h"

#include "runtime/core/Limits.h"
#include "runtime/hal/SerialQueue.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>
#include <unistd.h>

namespace hetrt::cpu {

namespace {

using core::Failure;
using hal::Error;
using hal::failWith;

/// Cache-line aligned, so kernels may use aligned vector loads.
constexpr size_t kAlignment = 64;

class CpuBuffer final : public hal::Buffer {
public:
  CpuBuffer(const void *owner, uint64_t size, void *bytes)
      : Buffer(size, 0), owner_(owner), bytes_(bytes) {}
  ~CpuBuffer() override { std::free(bytes_); }
  void *hostPointer() override { return bytes_; }
  const void *owner() const { return owner_; }
  uint8_t *bytes() { return static_cast<uint8_t *>(bytes_); }

private:
  const void *owner_;
  void *bytes_;
};

class CpuQueue final : public hal::SerialQueue {
public:
  explicit CpuQueue(const void *owner) : owner_(owner) {}
  ~CpuQueue() override { drain(); }

  bool fill(hal::Buffer &buffer, uint64_t offset, uint64_t size,
            uint32_t pattern, int patternBytes, Error &error) override {
    CpuBuffer *target = own(buffer, "fill", error);
    if (!target)
      return false;
    if (patternBytes != 1 && patternBytes != 2 && patternBytes != 4)
      return failWith(error, Failure::InvalidInput,
                      "fill: the pattern is " + std::to_string(patternBytes) +
                          " bytes; give 1, 2 or 4");
    if (offset % patternBytes != 0 || size % patternBytes != 0)
      return failWith(error, Failure::InvalidInput,
                      "fill: offset " + std::to_string(offset) + " and size " +
                          std::to_string(size) + " must be multiples of the " +
                          std::to_string(patternBytes) + "-byte pattern");
    if (!checkRange("fill", *target, offset, size, error))
      return false;
    submit([target, offset, size, pattern, patternBytes](Error &) {
      uint8_t *at = target->bytes() + offset;
      for (uint64_t i = 0; i < size; i += static_cast<uint64_t>(patternBytes))
        std::memcpy(at + i, &pattern, static_cast<size_t>(patternBytes));
      return true;
    });
    return true;
  }

  bool copy(hal::Buffer &source, uint64_t sourceOffset, hal::Buffer &target,
            uint64_t targetOffset, uint64_t size, Error &error) override {
    CpuBuffer *from = own(source, "copy", error);
    CpuBuffer *to = from ? own(target, "copy", error) : nullptr;
    if (!to || !checkRange("copy (source)", *from, sourceOffset, size, error) ||
        !checkRange("copy (target)", *to, targetOffset, size, error))
      return false;
    if (from == to && sourceOffset < targetOffset + size &&
        targetOffset < sourceOffset + size)
      return failWith(error, Failure::InvalidInput,
                      "copy: the source and target ranges of one buffer "
                      "overlap; copy through a second buffer");
    submit([from, sourceOffset, to, targetOffset, size](Error &) {
      std::memcpy(to->bytes() + targetOffset, from->bytes() + sourceOffset,
                  static_cast<size_t>(size));
      return true;
    });
    return true;
  }

  bool write(const void *host, hal::Buffer &target, uint64_t targetOffset,
             uint64_t size, Error &error) override {
    CpuBuffer *to = own(target, "write", error);
    if (!to || !checkHost("write", host, size, error) ||
        !checkRange("write", *to, targetOffset, size, error))
      return false;
    submit([host, to, targetOffset, size](Error &) {
      std::memcpy(to->bytes() + targetOffset, host, static_cast<size_t>(size));
      return true;
    });
    return true;
  }

  bool read(hal::Buffer &source, uint64_t sourceOffset, void *host,
            uint64_t size, Error &error) override {
    CpuBuffer *from = own(source, "read", error);
    if (!from || !checkHost("read", host, size, error) ||
        !checkRange("read", *from, sourceOffset, size, error))
      return false;
    submit([from, sourceOffset, host, size](Error &) {
      std::memcpy(host, from->bytes() + sourceOffset, static_cast<size_t>(size));
      return true;
    });
    return true;
  }

private:
  CpuBuffer *own(hal::Buffer &buffer, const char *what, Error &error) {
    auto *cpuBuffer = dynamic_cast<CpuBuffer *>(&buffer);
    if (!cpuBuffer || cpuBuffer->owner() != owner_) {
      failWith(error, Failure::InvalidInput,
               std::string(what) +
                   ": the buffer belongs to another device; move it with a "
                   "transfer between the devices' queues first");
      return nullptr;
    }
    return cpuBuffer;
  }
  static bool checkRange(const char *what, const CpuBuffer &buffer,
                         uint64_t offset, uint64_t size, Error &error) {
    if (hal::rangeInside(offset, size, buffer.size()))
      return true;
    return failWith(error, Failure::InvalidInput,
                    std::string(what) + ": bytes [" + std::to_string(offset) +
                        ", " + std::to_string(offset) + " + " +
                        std::to_string(size) + ") are outside the " +
                        std::to_string(buffer.size()) + "-byte buffer");
  }
  static bool checkHost(const char *what, const void *host, uint64_t size,
                        Error &error) {
    if (host || size == 0)
      return true;
    return failWith(error, Failure::InvalidInput,
                    std::string(what) + ": the host pointer is null");
  }

  const void *owner_;

public:
  bool dispatch(hal::Executable &, int, const uint32_t[3],
                const std::vector<hal::Buffer *> &, const std::string &,
                Error &error) override {
    return failWith(error, Failure::Unsupported,
                    "dispatch: cpu0 loads no executables of the device layer; "
                    "model code runs on the CPU through its sessions");
  }
};

std::string cpuDescription() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "x86-64 CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size())
        model = line.substr(colon + 2);
      break;
    }
  }
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  return model + ", " + std::to_string(threads) + " threads";
}

uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize)
             : 0;
}

class CpuDevice final : public hal::Device {
public:
  CpuDevice() {
    info_.name = "cpu0";
    info_.kind = "cpu";
    info_.description = cpuDescription();
    info_.memories.push_back({"host", physicalMemoryBytes(), true});
  }
  const hal::DeviceInfo &info() const override { return info_; }

  std::shared_ptr<hal::Buffer> allocate(int memorySpace, uint64_t size,
                                        Error &error) override {
    if (memorySpace != 0) {
      failWith(error, Failure::InvalidInput,
               "cpu0 has one memory space (0, \"host\"), not " +
                   std::to_string(memorySpace));
      return nullptr;
    }
    uint64_t available = core::availableMemoryBytes();
    if (size > available) {
      failWith(error, Failure::OutOfMemory,
               "cpu0: a buffer of " + core::formatBytes(size) +
                   " is more than the " + core::formatBytes(available) +
                   " of host memory available; allocate less");
      return nullptr;
    }
    uint64_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
    void *bytes = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
    if (!bytes) {
      failWith(error, Failure::OutOfMemory,
               "cpu0: cannot allocate a buffer of " + core::formatBytes(size));
      return nullptr;
    }
    try {
      return std::make_shared<CpuBuffer>(this, size, bytes);
    } catch (const std::bad_alloc &) {
      std::free(bytes);
      failWith(error, Failure::OutOfMemory, "cpu0: out of memory");
      return nullptr;
    }
  }

  std::unique_ptr<hal::Queue> createQueue(Error &error) override {
    try {
      return std::make_unique<CpuQueue>(this);
    } catch (const std::system_error &failure) {
      failWith(error, Failure::Unavailable,
               std::string("cpu0: cannot start a queue's thread: ") +
                   failure.what());
    } catch (const std::bad_alloc &) {
      failWith(error, Failure::OutOfMemory, "cpu0: out of memory");
    }
    return nullptr;
  }

  std::shared_ptr<hal::Event> createEvent(uint64_t initialValue,
                                          Error &error) override {
    try {
      return std::make_shared<hal::HostEvent>(initialValue);
    } catch (const std::bad_alloc &) {
      failWith(error, Failure::OutOfMemory, "cpu0: out of memory");
      return nullptr;
    }
  }

  bool runs(hal::ExecutableFormat) const override { return false; }
  std::shared_ptr<hal::Executable>
  loadExecutable(hal::ExecutableFormat, const std::string &,
                 std::vector<hal::KernelSignature>, Error &error) override {
    failWith(error, Failure::Unsupported,
             "cpu0 runs no SPIR-V; load it on a Vulkan device");
    return nullptr;
  }

private:
  hal::DeviceInfo info_;
};

} // namespace

std::shared_ptr<hal::Device> createCpuDevice() {
  return std::make_shared<CpuDevice>();
}

} // namespace hetrt::cpu
