// The runtime's device layer, in the spirit of IREE's HAL and ggml-backend:
// a device owns memory spaces and hands out buffers in them, and runs work
// submitted to its queues in order; events are timeline semaphores that
// order work across queues and devices and let the host wait. Each back end
// (the CPU here; Vulkan, CUDA and HIP beside it) implements these classes,
// and the conformance tests run against every back end present.
//
// Threading: a Device and its buffers may be used from any thread; a Queue
// is fed by one thread at a time; Events may be signaled and waited on from
// any thread.
#ifndef HETRT_HAL_DEVICE_H
#define HETRT_HAL_DEVICE_H

#include "runtime/core/Failure.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::hal {

/// A failure: its kind (which the C API maps to a status) and a message
/// naming what failed and the fix.
struct Error {
  core::Failure kind = core::Failure::InvalidInput;
  std::string message;
};

/// One memory of a device: its DRAM, its VRAM, a host-visible heap.
struct MemorySpaceInfo {
  /// "host", "device-local", "host-visible": unique within the device.
  std::string name;
  /// Bytes the space holds in all (0: unknown).
  uint64_t capacityBytes = 0;
  /// Whether the host can read and write its buffers through a pointer.
  bool hostVisible = false;
};

/// The SPIR-V a device runs (Vulkan devices; empty elsewhere), so code can
/// be chosen by what it requires: the highest version, as major * 100 +
/// minor (105: SPIR-V 1.5), and the capabilities and extensions its shaders
/// may declare, by their SPIR-V names ("Shader", "GroupNonUniformArithmetic",
/// "SPV_KHR_storage_buffer_storage_class").
struct SpirvSupport {
  int version = 0;
  std::vector<std::string> capabilities;
  std::vector<std::string> extensions;
  /// Threads of a subgroup (0: unknown).
  uint32_t subgroupSize = 0;
};

struct DeviceInfo {
  /// "cpu0", "vulkan0": what --device names.
  std::string name;
  /// "cpu", "vulkan", "cuda", "hip".
  std::string kind;
  /// The hardware in words ("AMD EPYC 9654, 2 threads").
  std::string description;
  /// The code a GPU runs, as the compiler names its chip ("sm_90",
  /// "gfx942"); empty for CPUs and Vulkan devices.
  std::string arch;
  std::vector<MemorySpaceInfo> memories;
  SpirvSupport spirv;
};

class Device;

/// Memory in one of a device's spaces. Released when the last owner drops it;
/// work that uses it must have finished by then (the queues' finish()).
class Buffer {
public:
  virtual ~Buffer() = default;
  uint64_t size() const { return size_; }
  /// Index into the device's DeviceInfo::memories.
  int memorySpace() const { return memorySpace_; }
  /// The bytes, for host-visible spaces; null otherwise.
  virtual void *hostPointer() = 0;

protected:
  Buffer(uint64_t size, int memorySpace)
      : size_(size), memorySpace_(memorySpace) {}

private:
  uint64_t size_;
  int memorySpace_;
};

/// A timeline semaphore: a 64-bit value that only grows. Queues signal it to
/// a value when the work before the signal is done, and wait for a value
/// before the work after the wait starts.
class Event {
public:
  virtual ~Event() = default;
  /// The value reached so far.
  virtual uint64_t value() const = 0;
  /// Sets the value from the host (never lowers it).
  virtual void signal(uint64_t value) = 0;
  /// Blocks until the value reaches `value`, or `timeoutNanoseconds` pass;
  /// false on timeout. A queue that failed signals its events past any value
  /// with the failure recorded, so waiters never hang on a failed queue.
  virtual bool hostWait(uint64_t value, uint64_t timeoutNanoseconds) = 0;
  /// The failure of the queue that should have signaled, if any.
  virtual const Error *failure() const = 0;
  /// How long queues' waits for it have held their work back, in all: the
  /// time a transfer it marks was not hidden behind other work.
  virtual uint64_t blockedNanoseconds() const = 0;
};

/// What a kernel of an executable takes: its entry point, the storage
/// buffers bound at descriptor set 0, bindings 0..bindings-1 (in dispatch
/// order), and bytes of push constants.
struct KernelSignature {
  std::string entryPoint;
  int bindings = 0;
  uint32_t pushConstantBytes = 0;
  /// Threads of a workgroup, for formats whose code does not carry it (CUDA
  /// and HIP modules launch with a block size).
  uint32_t workgroupSize[3] = {1, 1, 1};
};

enum class ExecutableFormat {
  /// A SPIR-V module for a Vulkan compute device.
  SpirV,
  /// An x86-64 ELF shared object of segment entry points (the code the x86
  /// target compiles for a program's CPU segments; abi/CodeRecord.h). Each
  /// kernel takes its buffers as memref descriptors shaped by the signature
  /// the code exports, and its push constants are the int64 sizes of the
  /// dynamic dimensions of those buffers, in order.
  X86SharedObject,
  /// A CUDA module image (a cubin for the device's chip, or PTX the driver
  /// compiles), or an AMDGPU code object for HIP: gpu-dialect kernels lowered
  /// through NVVM or ROCDL. Each kernel takes its buffers as rank-1 memref
  /// descriptors (allocated and aligned pointer, offset, size, stride: five
  /// arguments each) and no push constants.
  GpuModule,
};

/// Code loaded on a device, ready to dispatch: pipelines are built once, at
/// load.
class Executable {
public:
  virtual ~Executable() = default;
  const std::vector<KernelSignature> &kernels() const { return kernels_; }
  /// The index of the kernel with `entryPoint`, or -1.
  int kernelIndex(const std::string &entryPoint) const {
    for (size_t i = 0; i < kernels_.size(); ++i)
      if (kernels_[i].entryPoint == entryPoint)
        return static_cast<int>(i);
    return -1;
  }

protected:
  explicit Executable(std::vector<KernelSignature> kernels)
      : kernels_(std::move(kernels)) {}

private:
  std::vector<KernelSignature> kernels_;
};

/// An ordered stream of work on one device. Submissions check their
/// arguments and return false with `error` at once; failures while the work
/// runs are reported by finish() and by the events the queue signals after.
class Queue {
public:
  virtual ~Queue() = default;
  /// Writes `size` bytes of `buffer` from `offset` with `pattern` repeated
  /// (`patternBytes` of 1, 2 or 4); offset and size are multiples of it.
  virtual bool fill(Buffer &buffer, uint64_t offset, uint64_t size,
                    uint32_t pattern, int patternBytes, Error &error) = 0;
  /// Copies `size` bytes; the buffers may be in any memory spaces this
  /// device can reach, and may be the same buffer if the ranges are disjoint.
  virtual bool copy(Buffer &source, uint64_t sourceOffset, Buffer &target,
                    uint64_t targetOffset, uint64_t size, Error &error) = 0;
  /// Host memory into a buffer and back, ordered with the rest of the queue;
  /// the host memory must stay valid until the work is done.
  virtual bool write(const void *host, Buffer &target, uint64_t targetOffset,
                     uint64_t size, Error &error) = 0;
  virtual bool read(Buffer &source, uint64_t sourceOffset, void *host,
                    uint64_t size, Error &error) = 0;
  /// Runs kernel `kernel` of `executable` over `groups` workgroups, with
  /// `bindings` (buffers of this device, one per binding of the kernel's
  /// signature) and `pushConstants` (its signature's size). The buffers and
  /// the executable must outlive the work.
  virtual bool dispatch(Executable &executable, int kernel,
                        const uint32_t groups[3],
                        const std::vector<Buffer *> &bindings,
                        const std::string &pushConstants, Error &error) = 0;
  /// Work after this waits until `event` reaches `value`.
  virtual bool wait(Event &event, uint64_t value, Error &error) = 0;
  /// `event` reaches `value` once the work before this is done.
  virtual bool signal(Event &event, uint64_t value, Error &error) = 0;
  /// Blocks until everything submitted is done; false with the first
  /// failure of the work since the last finish().
  virtual bool finish(Error &error) = 0;
  /// How long the queue has spent running its work, waits left out.
  virtual uint64_t busyNanoseconds() const = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual const DeviceInfo &info() const = 0;
  /// A buffer of `size` bytes in memory space `memorySpace`; refuses sizes
  /// past what the space has free with the size, the space and the limit.
  virtual std::shared_ptr<Buffer> allocate(int memorySpace, uint64_t size,
                                           Error &error) = 0;
  virtual std::unique_ptr<Queue> createQueue(Error &error) = 0;
  virtual std::shared_ptr<Event> createEvent(uint64_t initialValue,
                                             Error &error) = 0;
  /// A buffer over host memory the caller owns and keeps valid and
  /// unchanged while the buffer lives (a mapped model file), read-only to the
  /// device: work that writes it is refused. Devices that cannot read host
  /// memory in place refuse (Unsupported); copy into a buffer instead.
  virtual std::shared_ptr<Buffer> importHostMemory(const void *host,
                                                   uint64_t size,
                                                   Error &error);
  /// Whether the device runs code of `format`.
  virtual bool runs(ExecutableFormat format) const = 0;
  /// Loads `code` (of `format`) with the signatures of its kernels; refuses
  /// code the device does not run (Unsupported) or that is malformed.
  virtual std::shared_ptr<Executable>
  loadExecutable(ExecutableFormat format, const std::string &code,
                 std::vector<KernelSignature> kernels, Error &error) = 0;
};

/// The devices of this machine, the CPU first, then each back end's in the
/// order its driver lists them. Back ends whose driver is missing are left
/// out; `unavailable` (when not null) receives one line per such back end
/// saying why.
std::vector<std::shared_ptr<Device>>
enumerateDevices(std::vector<std::string> *unavailable = nullptr);

/// The lines enumerateDevices gives `unavailable`, kept for the process.
const std::vector<std::string> &unavailableBackEnds();

} // namespace hetrt::hal

#endif // HETRT_HAL_DEVICE_H
