// What the CUDA and HIP back ends share: one device layer (GpuDevice.h) over
// a driver interface that each of them implements on its API, loaded at run
// time. The interface is the handful of calls a GPU back end needs: memory
// (device, pinned host and managed), asynchronous copies and fills on streams,
// modules and kernel launches. Every call returns an empty string on
// success, else the driver's error in words.
#ifndef HETRT_BACKENDS_GPU_GPUDRIVER_H
#define HETRT_BACKENDS_GPU_GPUDRIVER_H

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hetrt::gpu {

/// An address a kernel dereferences: device memory, or pinned host memory
/// mapped into the device's address space.
using DevicePointer = uint64_t;
using Stream = void *;
using Module = void *;
using Function = void *;

/// One GPU of a driver, as enumerate() found it.
struct GpuProperties {
  /// "NVIDIA H200", "AMD Instinct MI300X".
  std::string name;
  /// The code it runs: "sm_90", "gfx942".
  std::string arch;
  uint64_t memoryBytes = 0;
  int multiprocessors = 0;
  /// Whether the driver offers managed (unified) memory on it: one address
  /// the host and the device both use, pages moved on demand.
  bool managedMemory = false;
};

class GpuDriver {
public:
  virtual ~GpuDriver() = default;
  /// "cuda", "hip": the device kind and the prefix of device names.
  virtual const char *kind() const = 0;
  /// The library's version in words, for descriptions.
  virtual std::string version() const = 0;
  virtual const std::vector<GpuProperties> &devices() const = 0;

  /// Makes device `index` (its primary context) current on this thread.
  virtual std::string makeCurrent(int index) = 0;
  virtual std::string freeMemory(int index, uint64_t &freeBytes) = 0;
  virtual std::string allocateDevice(uint64_t size, DevicePointer &memory) = 0;
  virtual std::string freeDevice(DevicePointer memory) = 0;
  /// Page-locked host memory the device reads and writes through `device`.
  virtual std::string allocatePinned(uint64_t size, void *&host,
                                     DevicePointer &device) = 0;
  virtual std::string freePinned(void *host) = 0;
  /// Managed memory, at one address for the host and the device (where
  /// GpuProperties::managedMemory says the device has it).
  virtual std::string allocateManaged(uint64_t size, DevicePointer &memory) = 0;
  virtual std::string freeManaged(DevicePointer memory) = 0;

  virtual std::string createStream(Stream &stream) = 0;
  virtual std::string destroyStream(Stream stream) = 0;
  virtual std::string synchronize(Stream stream) = 0;
  virtual std::string copy(DevicePointer target, DevicePointer source,
                           uint64_t size, Stream stream) = 0;
  virtual std::string copyToDevice(DevicePointer target, const void *host,
                                   uint64_t size, Stream stream) = 0;
  virtual std::string copyToHost(void *host, DevicePointer source,
                                 uint64_t size, Stream stream) = 0;
  /// `count` elements of `patternBytes` (1, 2 or 4) set to `pattern`.
  virtual std::string fill(DevicePointer target, uint32_t pattern,
                           int patternBytes, uint64_t count,
                           Stream stream) = 0;

  /// Loads a module image (a cubin, PTX, or a code object).
  virtual std::string loadModule(const std::string &image, Module &module) = 0;
  virtual std::string unloadModule(Module module) = 0;
  virtual std::string function(Module module, const std::string &name,
                               Function &function) = 0;
  /// Launches `function` over `groups` blocks of `block` threads with its
  /// arguments (pointers to each argument's bytes, as the driver takes them).
  virtual std::string launch(Function function, const uint32_t groups[3],
                             const uint32_t block[3], void **arguments,
                             Stream stream) = 0;
};

/// `T` itself: names a function pointer type spelled inside a macro, where
/// `type name` would not parse.
template <typename T> using EntryPoint = T;

/// Binds `entry` to the symbol `name` of a driver library opened with
/// dlopen; keeps the first name the library lacks in `missing`.
template <typename Entry>
void bindEntryPoint(void *library, Entry &entry, const char *name,
                    const char *&missing) {
  entry = reinterpret_cast<Entry>(dlsym(library, name));
  if (!entry && !missing)
    missing = name;
}

} // namespace hetrt::gpu

#endif // HETRT_BACKENDS_GPU_GPUDRIVER_H
