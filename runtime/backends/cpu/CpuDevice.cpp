// The CPU device: buffers from aligned host allocations (or the caller's
// host memory, read-only); its queues are serial queues (hal/SerialQueue.h)
// whose work is memory operations and calls of the segment code the x86
// target compiled, which spreads over a thread pool of the queue's.
#include "runtime/backends/cpu/CpuDevice.h"

#include "runtime/backends/cpu/CpuCode.h"
#include "runtime/core/HostNodes.h"
#include "runtime/core/Limits.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/format/InputFile.h"
#include "runtime/hal/SerialQueue.h"

#include <algorithm>
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
  CpuBuffer(const void *owner, uint64_t size, void *bytes, int memorySpace = 0)
      : Buffer(size, memorySpace), owner_(owner), bytes_(bytes) {}
  /// Host memory of the caller's, read-only to the device.
  static std::shared_ptr<CpuBuffer> imported(const void *owner, uint64_t size,
                                             const void *bytes) {
    auto buffer = std::make_shared<CpuBuffer>(owner, size,
                                              const_cast<void *>(bytes));
    buffer->imported_ = true;
    return buffer;
  }
  /// Memory bound to one NUMA node, the device's memory `memorySpace`.
  static std::shared_ptr<CpuBuffer>
  onNode(const void *owner, uint64_t size, int memorySpace,
         std::unique_ptr<core::NodeMemory> memory) {
    auto buffer = std::make_shared<CpuBuffer>(owner, size, memory->data(),
                                              memorySpace);
    buffer->node_ = std::move(memory);
    return buffer;
  }
  ~CpuBuffer() override {
    if (!imported_ && !node_)
      std::free(bytes_);
  }
  /// Null for imported memory: the host must not write it through the
  /// device's buffer.
  void *hostPointer() override { return imported_ ? nullptr : bytes_; }
  const void *owner() const { return owner_; }
  uint8_t *bytes() { return static_cast<uint8_t *>(bytes_); }
  bool readOnly() const { return imported_; }

private:
  const void *owner_;
  void *bytes_;
  bool imported_ = false;
  std::unique_ptr<core::NodeMemory> node_;
};

/// One buffer of a segment entry point, as its signature describes it.
struct SegmentBinding {
  format::SegmentBindingKind kind = format::SegmentBindingKind::Tensor;
  int64_t elementBytes = 1;
  /// -1 where dynamic.
  std::vector<int64_t> sizes;
};

struct SegmentKernel {
  EntryFunction entry = nullptr;
  std::vector<SegmentBinding> bindings;
  /// Dynamic sizes among the tensor bindings: the push constants' count.
  size_t dynamicSizes = 0;
};

/// Reads the signature `values` (abi/CodeRecord.h) of `name`; false with
/// `why` when it is malformed.
bool parseSignature(const int64_t *values, size_t count, SegmentKernel &kernel,
                    std::string &why) {
  size_t at = 0;
  auto next = [&](int64_t &out) {
    if (at >= count)
      return false;
    out = values[at++];
    return true;
  };
  int64_t bindings = 0;
  if (!next(bindings) || bindings < 0 ||
      bindings > format::kMaxSegmentBindings) {
    why = "gives no count of 0 to " +
          std::to_string(format::kMaxSegmentBindings) + " buffers";
    return false;
  }
  for (int64_t b = 0; b < bindings; ++b) {
    SegmentBinding binding;
    int64_t kind = 0, rank = 0;
    if (!next(kind) || !next(binding.elementBytes) || !next(rank) ||
        (kind != 0 && kind != 1) || binding.elementBytes < 1 ||
        binding.elementBytes > 16 || rank < 0 || rank > 8 ||
        (kind == 1 && (rank != 1 || binding.elementBytes != 1))) {
      why = "describes buffer " + std::to_string(b) +
            " with a kind, element size or rank out of range";
      return false;
    }
    binding.kind = static_cast<format::SegmentBindingKind>(kind);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = 0;
      if (!next(size) || size < -1 || size > (int64_t(1) << 40)) {
        why = "gives buffer " + std::to_string(b) + " a size out of range";
        return false;
      }
      binding.sizes.push_back(size);
      if (size == -1 && kind == 0)
        ++kernel.dynamicSizes;
    }
    kernel.bindings.push_back(std::move(binding));
  }
  if (at != count) {
    why = "holds values past its buffers";
    return false;
  }
  return true;
}

class CpuExecutable final : public hal::Executable {
public:
  CpuExecutable(const void *owner, std::vector<hal::KernelSignature> kernels,
                std::unique_ptr<CodeImage> image,
                std::vector<SegmentKernel> segments)
      : Executable(std::move(kernels)), owner_(owner),
        image_(std::move(image)), segments_(std::move(segments)) {}
  const void *owner() const { return owner_; }
  const SegmentKernel &segment(int kernel) const { return segments_[kernel]; }
  const CodeImage &image() const { return *image_; }

private:
  const void *owner_;
  std::unique_ptr<CodeImage> image_;
  std::vector<SegmentKernel> segments_;
};

class CpuQueue final : public hal::SerialQueue {
public:
  explicit CpuQueue(const void *owner) : owner_(owner) {}
  ~CpuQueue() override { drain(); }

  bool fill(hal::Buffer &buffer, uint64_t offset, uint64_t size,
            uint32_t pattern, int patternBytes, Error &error) override {
    CpuBuffer *target = writable(buffer, "fill", error);
    if (!target)
      return false;
    if (!hal::checkFillPattern(offset, size, patternBytes, error))
      return false;
    if (!hal::checkRange("fill", offset, size, target->size(), error))
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
    CpuBuffer *to = from ? writable(target, "copy", error) : nullptr;
    if (!to || !hal::checkCopy(*from, sourceOffset, *to, targetOffset, size,
                               error))
      return false;
    submit([from, sourceOffset, to, targetOffset, size](Error &) {
      std::memcpy(to->bytes() + targetOffset, from->bytes() + sourceOffset,
                  static_cast<size_t>(size));
      return true;
    });
    return true;
  }

  bool write(const void *host, hal::Buffer &target, uint64_t targetOffset,
             uint64_t size, Error &error) override {
    CpuBuffer *to = writable(target, "write", error);
    if (!to || !hal::checkHostPointer("write", host, size, error) ||
        !hal::checkRange("write", targetOffset, size, to->size(), error))
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
    if (!from || !hal::checkHostPointer("read", host, size, error) ||
        !hal::checkRange("read", sourceOffset, size, from->size(), error))
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
  CpuBuffer *writable(hal::Buffer &buffer, const char *what, Error &error) {
    CpuBuffer *cpuBuffer = own(buffer, what, error);
    if (cpuBuffer && cpuBuffer->readOnly()) {
      failWith(error, Failure::InvalidInput,
               std::string(what) + ": the buffer is imported host memory, "
                                   "read-only to the device");
      return nullptr;
    }
    return cpuBuffer;
  }

  const void *owner_;

  /// The threads kernels run on, started at the first dispatch.
  std::unique_ptr<core::ThreadPool> pool_;
  core::CpuRuntimeInterface runtimeInterface_{};

public:
  bool dispatch(hal::Executable &executable, int kernel,
                const uint32_t groups[3],
                const std::vector<hal::Buffer *> &bindings,
                const std::string &pushConstants, Error &error) override {
    auto *code = dynamic_cast<CpuExecutable *>(&executable);
    if (!code || code->owner() != owner_)
      return failWith(error, Failure::InvalidInput,
                      "dispatch: the executable was not loaded on cpu0");
    if (kernel < 0 || static_cast<size_t>(kernel) >= code->kernels().size())
      return failWith(error, Failure::InvalidInput,
                      "dispatch: the executable has no kernel " +
                          std::to_string(kernel));
    const std::string &name = code->kernels()[kernel].entryPoint;
    const SegmentKernel &segment = code->segment(kernel);
    if (groups[0] != 1 || groups[1] != 1 || groups[2] != 1)
      return failWith(error, Failure::InvalidInput,
                      "dispatch " + name + ": CPU segment code runs as one "
                      "workgroup and spreads over the threads itself; give a "
                      "grid of [1, 1, 1]");
    if (bindings.size() != segment.bindings.size())
      return failWith(error, Failure::InvalidInput,
                      "dispatch " + name + ": takes " +
                          std::to_string(segment.bindings.size()) +
                          " buffers, not " + std::to_string(bindings.size()));
    if (pushConstants.size() != segment.dynamicSizes * 8)
      return failWith(error, Failure::InvalidInput,
                      "dispatch " + name + ": takes " +
                          std::to_string(segment.dynamicSizes) +
                          " dynamic sizes (int64 push constants), not " +
                          std::to_string(pushConstants.size()) + " bytes");
    std::vector<int64_t> dynamic(segment.dynamicSizes);
    if (!dynamic.empty())
      std::memcpy(dynamic.data(), pushConstants.data(), pushConstants.size());
    // One memref descriptor per buffer: allocated and aligned pointers,
    // offset, sizes, row-major strides.
    auto descriptors =
        std::make_shared<std::vector<std::vector<int64_t>>>();
    size_t nextDynamic = 0;
    for (size_t b = 0; b < bindings.size(); ++b) {
      CpuBuffer *buffer = own(*bindings[b], "dispatch", error);
      if (!buffer)
        return false;
      const SegmentBinding &binding = segment.bindings[b];
      std::vector<int64_t> sizes = binding.sizes;
      if (binding.kind == format::SegmentBindingKind::ModelWeights)
        sizes[0] = static_cast<int64_t>(buffer->size());
      else if (buffer->readOnly())
        return failWith(error, Failure::InvalidInput,
                        "dispatch " + name + ": buffer " + std::to_string(b) +
                            " is read-only host memory, but the code may "
                            "write it");
      // Bytes the code may touch, checked without overflow.
      uint64_t bytes = static_cast<uint64_t>(binding.elementBytes);
      for (int64_t &size : sizes) {
        if (size == -1)
          size = dynamic[nextDynamic++];
        if (size < 0 || size > (int64_t(1) << 40) ||
            (size > 0 && bytes > buffer->size() / static_cast<uint64_t>(size)))
          return failWith(error, Failure::InvalidInput,
                          "dispatch " + name + ": buffer " +
                              std::to_string(b) + " of " +
                              std::to_string(buffer->size()) +
                              " bytes is smaller than the code's view of it");
        bytes *= static_cast<uint64_t>(size);
      }
      std::vector<int64_t> descriptor(3 + 2 * sizes.size());
      auto address = reinterpret_cast<int64_t>(buffer->bytes());
      descriptor[0] = descriptor[1] = address;
      descriptor[2] = 0;
      int64_t stride = 1;
      for (size_t d = sizes.size(); d-- > 0;) {
        descriptor[3 + d] = sizes[d];
        descriptor[3 + sizes.size() + d] = stride;
        stride *= std::max<int64_t>(sizes[d], 1);
      }
      descriptors->push_back(std::move(descriptor));
    }
    EntryFunction entry = segment.entry;
    submit([this, entry, descriptors](Error &failure) {
      if (!pool_) {
        std::string why;
        pool_ = core::ThreadPool::create(0, why);
        if (!pool_)
          return failWith(failure, Failure::Unavailable,
                          "cpu0: cannot start the kernels' threads: " + why);
        runtimeInterface_ = core::makeRuntimeInterface(*pool_);
      }
      std::vector<void *> arguments;
      for (std::vector<int64_t> &descriptor : *descriptors)
        arguments.push_back(descriptor.data());
      arguments.push_back(&runtimeInterface_);
      entry(arguments.data());
      return true;
    });
    return true;
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
    // Then each NUMA node's memory: a buffer there comes from that node.
    for (const core::HostNode &node : core::hostNodes())
      info_.memories.push_back({node.name(), node.capacityBytes, true});
  }
  const hal::DeviceInfo &info() const override { return info_; }

  std::shared_ptr<hal::Buffer> allocate(int memorySpace, uint64_t size,
                                        Error &error) override {
    if (memorySpace < 0 ||
        static_cast<size_t>(memorySpace) >= info_.memories.size()) {
      failWith(error, Failure::InvalidInput,
               "cpu0 has " + std::to_string(info_.memories.size()) +
                   " memory spaces (0: \"host\", then its NUMA nodes), not " +
                   std::to_string(memorySpace));
      return nullptr;
    }
    if (memorySpace > 0)
      return allocateOnNode(memorySpace, size, error);
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

  std::shared_ptr<hal::Buffer> allocateOnNode(int memorySpace, uint64_t size,
                                             Error &error) {
    const core::HostNode &node =
        core::hostNodes()[static_cast<size_t>(memorySpace - 1)];
    if (size > node.capacityBytes) {
      failWith(error, Failure::OutOfMemory,
               "cpu0: a buffer of " + core::formatBytes(size) +
                   " is more than " + node.name() + "'s " +
                   core::formatBytes(node.capacityBytes) + "; allocate less");
      return nullptr;
    }
    std::string cause;
    std::unique_ptr<core::NodeMemory> memory = core::NodeMemory::allocate(
        node.index, static_cast<size_t>(size), cause);
    if (!memory) {
      failWith(error, Failure::OutOfMemory, "cpu0: " + cause);
      return nullptr;
    }
    try {
      return CpuBuffer::onNode(this, size, memorySpace, std::move(memory));
    } catch (const std::bad_alloc &) {
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

  std::shared_ptr<hal::Buffer> importHostMemory(const void *host,
                                                uint64_t size,
                                                Error &error) override {
    if (!host && size > 0) {
      failWith(error, Failure::InvalidInput,
               "importHostMemory: the host pointer is null");
      return nullptr;
    }
    try {
      return CpuBuffer::imported(this, size, host);
    } catch (const std::bad_alloc &) {
      failWith(error, Failure::OutOfMemory, "cpu0: out of memory");
      return nullptr;
    }
  }

  bool runs(hal::ExecutableFormat format) const override {
    return format == hal::ExecutableFormat::X86SharedObject;
  }
  std::shared_ptr<hal::Executable>
  loadExecutable(hal::ExecutableFormat format, const std::string &code,
                 std::vector<hal::KernelSignature> kernels,
                 Error &error) override {
    if (format != hal::ExecutableFormat::X86SharedObject) {
      failWith(error, Failure::Unsupported,
               "cpu0 runs no SPIR-V; load it on a Vulkan device");
      return nullptr;
    }
    std::string message;
    Failure kind = Failure::InvalidInput;
    std::unique_ptr<CodeImage> image =
        CodeImage::load(code, "cpu0: the segment code", {}, message, kind);
    if (!image) {
      failWith(error, kind, message);
      return nullptr;
    }
    std::vector<SegmentKernel> segments;
    for (const hal::KernelSignature &kernel : kernels) {
      SegmentKernel segment;
      std::string origin = "cpu0: the segment code's entry point \"" +
                           format::printable(kernel.entryPoint) + "\"";
      segment.entry =
          image->function(format::kEntryWrapperPrefix + kernel.entryPoint);
      size_t size = 0;
      const char *signature = image->data(
          format::kSegmentSignaturePrefix + kernel.entryPoint, size);
      std::vector<int64_t> values(size / 8);
      if (signature && !values.empty())
        std::memcpy(values.data(), signature, values.size() * 8);
      std::string why = "is missing";
      if (!segment.entry || !signature || size % 8 != 0 ||
          !parseSignature(values.data(), values.size(), segment, why)) {
        failWith(error, Failure::InvalidInput,
                 origin + (segment.entry ? "'s signature " + why
                                         : std::string(" is missing")) +
                     "; the pack is damaged or was altered (compile the "
                     "model again with `hetc compile`)");
        return nullptr;
      }
      if (static_cast<size_t>(kernel.bindings) != segment.bindings.size()) {
        failWith(error, Failure::InvalidInput,
                 origin + " takes " + std::to_string(segment.bindings.size()) +
                     " buffers, but the program says " +
                     std::to_string(kernel.bindings));
        return nullptr;
      }
      segments.push_back(std::move(segment));
    }
    try {
      return std::make_shared<CpuExecutable>(this, std::move(kernels),
                                             std::move(image),
                                             std::move(segments));
    } catch (const std::bad_alloc &) {
      failWith(error, Failure::OutOfMemory, "cpu0: out of memory");
      return nullptr;
    }
  }

private:
  hal::DeviceInfo info_;
};

} // namespace

std::shared_ptr<hal::Device> createCpuDevice() {
  return std::make_shared<CpuDevice>();
}

const std::array<int64_t, format::kCodeRecordLength> *
segmentCodeRecord(const hal::Executable &executable) {
  auto *code = dynamic_cast<const CpuExecutable *>(&executable);
  return code ? &code->image().record() : nullptr;
}

const std::vector<int64_t> *
segmentWeightLayouts(const hal::Executable &executable) {
  auto *code = dynamic_cast<const CpuExecutable *>(&executable);
  return code ? &code->image().weightLayouts() : nullptr;
}

} // namespace hetrt::cpu
