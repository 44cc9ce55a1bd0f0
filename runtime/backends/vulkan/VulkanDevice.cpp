// Vulkan devices: the loader is opened with dlopen and every entry point
// resolved through vkGetInstanceProcAddr / vkGetDeviceProcAddr, so no link
// dependency exists. Each device gets one compute queue of the driver,
// shared by the device layer's queues (submissions are serialized by a
// mutex); each device-layer queue has its own command pool and fence, and
// runs its work synchronously on its serial queue's thread, so events and
// host reads need no further bookkeeping. Speed is not the goal here,
// exactness is: the same code serves lavapipe in tests and real GPUs.
#include "runtime/backends/vulkan/VulkanDevice.h"

#include "runtime/hal/SerialQueue.h"

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <cstring>
#include <dlfcn.h>
#include <mutex>

namespace hetrt::vulkan {

namespace {

using core::Failure;
using hal::Error;
using hal::failWith;

// The entry points used, resolved per instance and per device.
#define HETRT_VK_INSTANCE_FUNCTIONS(X)                                         \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)
#define HETRT_VK_DEVICE_FUNCTIONS(X)                                           \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkResetCommandPool)                                                        \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdFillBuffer)                                                           \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkQueueSubmit)                                                             \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkWaitForFences)                                                           \
  X(vkResetFences)

#define HETRT_VK_DECLARE(name) PFN_##name name = nullptr;

std::string resultName(VkResult result) {
  switch (result) {
  case VK_ERROR_OUT_OF_HOST_MEMORY:
    return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case VK_ERROR_INITIALIZATION_FAILED:
    return "VK_ERROR_INITIALIZATION_FAILED";
  case VK_ERROR_DEVICE_LOST:
    return "VK_ERROR_DEVICE_LOST";
  case VK_ERROR_INCOMPATIBLE_DRIVER:
    return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case VK_ERROR_MEMORY_MAP_FAILED:
    return "VK_ERROR_MEMORY_MAP_FAILED";
  default:
    return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

Failure failureOf(VkResult result) {
  return result == VK_ERROR_OUT_OF_HOST_MEMORY ||
                 result == VK_ERROR_OUT_OF_DEVICE_MEMORY
             ? Failure::OutOfMemory
             : Failure::Unavailable;
}

/// The loader and one instance, shared by every device of the process.
struct Instance {
  void *library = nullptr;
  VkInstance handle = VK_NULL_HANDLE;
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;
  HETRT_VK_INSTANCE_FUNCTIONS(HETRT_VK_DECLARE)

  ~Instance() {
    if (handle && vkDestroyInstance)
      vkDestroyInstance(handle, nullptr);
    if (library)
      dlclose(library);
  }
};

std::shared_ptr<Instance> createInstance(std::string &why) {
  auto instance = std::make_shared<Instance>();
  instance->library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!instance->library) {
    why = "vulkan: no Vulkan loader (libvulkan.so.1: " + std::string(dlerror()) +
          "); install one and a driver (Debian: libvulkan1 and "
          "mesa-vulkan-drivers)";
    return nullptr;
  }
  instance->getInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(instance->library, "vkGetInstanceProcAddr"));
  auto createInstanceFn =
      instance->getInstanceProcAddr
          ? reinterpret_cast<PFN_vkCreateInstance>(instance->getInstanceProcAddr(
                VK_NULL_HANDLE, "vkCreateInstance"))
          : nullptr;
  if (!createInstanceFn) {
    why = "vulkan: the loader lacks vkCreateInstance";
    return nullptr;
  }
  VkApplicationInfo application = {};
  application.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  application.pApplicationName = "hetrt";
  application.pEngineName = "hetc";
  application.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info = {};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &application;
  VkResult result = createInstanceFn(&info, nullptr, &instance->handle);
  if (result != VK_SUCCESS) {
    instance->handle = VK_NULL_HANDLE;
    why = "vulkan: vkCreateInstance failed (" + resultName(result) +
          "); no Vulkan 1.2 driver is installed";
    return nullptr;
  }
#define HETRT_VK_LOAD_INSTANCE(name)                                           \
  instance->name = reinterpret_cast<PFN_##name>(                               \
      instance->getInstanceProcAddr(instance->handle, #name));                 \
  if (!instance->name) {                                                       \
    why = "vulkan: the loader lacks " #name;                                   \
    return nullptr;                                                            \
  }
  HETRT_VK_INSTANCE_FUNCTIONS(HETRT_VK_LOAD_INSTANCE)
#undef HETRT_VK_LOAD_INSTANCE
  return instance;
}

/// One logical device and the driver queue its device-layer queues share.
struct Context {
  std::shared_ptr<Instance> instance;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  std::mutex submitMutex;
  /// Memory type per memory space of the device's DeviceInfo.
  std::vector<uint32_t> spaceTypes;
  std::vector<bool> spaceHostVisible;
  /// A host-visible, coherent type for staging transfers.
  uint32_t stagingType = 0;
  VkPhysicalDeviceMemoryProperties memory = {};
  HETRT_VK_DEVICE_FUNCTIONS(HETRT_VK_DECLARE)

  ~Context() {
    if (device && vkDestroyDevice)
      vkDestroyDevice(device, nullptr);
  }
};

class VulkanBuffer final : public hal::Buffer {
public:
  VulkanBuffer(std::shared_ptr<Context> context, uint64_t size, int space)
      : Buffer(size, space), context_(std::move(context)) {}
  ~VulkanBuffer() override {
    if (buffer_)
      context_->vkDestroyBuffer(context_->device, buffer_, nullptr);
    if (memory_)
      context_->vkFreeMemory(context_->device, memory_, nullptr);
  }
  void *hostPointer() override { return mapped_; }

  /// Creates the buffer (rounded up to whole words, as fills need) in
  /// memory type `type`, mapped when `map`.
  bool create(uint32_t type, bool map, Error &error) {
    VkBufferCreateInfo info = {};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = size() < 4 ? 4 : (size() + 3) / 4 * 4;
    info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult result =
        context_->vkCreateBuffer(context_->device, &info, nullptr, &buffer_);
    if (result != VK_SUCCESS)
      return failWith(error, failureOf(result),
                      "vkCreateBuffer failed (" + resultName(result) + ")");
    VkMemoryRequirements needs;
    context_->vkGetBufferMemoryRequirements(context_->device, buffer_, &needs);
    // The space's type when the buffer may live there, else one with the
    // same properties that it may.
    VkMemoryPropertyFlags wanted =
        context_->memory.memoryTypes[type].propertyFlags;
    if (!(needs.memoryTypeBits & (1u << type))) {
      bool found = false;
      for (uint32_t t = 0; t < context_->memory.memoryTypeCount && !found; ++t)
        if ((needs.memoryTypeBits & (1u << t)) &&
            (context_->memory.memoryTypes[t].propertyFlags & wanted) == wanted) {
          type = t;
          found = true;
        }
      if (!found)
        return failWith(error, Failure::Unsupported,
                        "the driver places no buffer in this memory space");
    }
    VkMemoryAllocateInfo allocate = {};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.allocationSize = needs.size;
    allocate.memoryTypeIndex = type;
    result = context_->vkAllocateMemory(context_->device, &allocate, nullptr,
                                        &memory_);
    if (result != VK_SUCCESS) {
      memory_ = VK_NULL_HANDLE;
      return failWith(error, failureOf(result),
                      "vkAllocateMemory of " + std::to_string(needs.size) +
                          " bytes failed (" + resultName(result) + ")");
    }
    result = context_->vkBindBufferMemory(context_->device, buffer_, memory_, 0);
    if (result != VK_SUCCESS)
      return failWith(error, failureOf(result),
                      "vkBindBufferMemory failed (" + resultName(result) + ")");
    if (map) {
      result = context_->vkMapMemory(context_->device, memory_, 0,
                                     VK_WHOLE_SIZE, 0, &mapped_);
      if (result != VK_SUCCESS) {
        mapped_ = nullptr;
        return failWith(error, failureOf(result),
                        "vkMapMemory failed (" + resultName(result) + ")");
      }
    }
    return true;
  }

  VkBuffer handle() const { return buffer_; }
  const Context *context() const { return context_.get(); }

private:
  std::shared_ptr<Context> context_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void *mapped_ = nullptr;
};

class VulkanQueue final : public hal::SerialQueue {
public:
  explicit VulkanQueue(std::shared_ptr<Context> context)
      : context_(std::move(context)) {}
  ~VulkanQueue() override {
    drain();
    if (fence_)
      context_->vkDestroyFence(context_->device, fence_, nullptr);
    if (pool_)
      context_->vkDestroyCommandPool(context_->device, pool_, nullptr);
  }

  bool create(Error &error) {
    VkCommandPoolCreateInfo poolInfo = {};
    poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    poolInfo.queueFamilyIndex = context_->queueFamily;
    VkResult result = context_->vkCreateCommandPool(context_->device, &poolInfo,
                                                    nullptr, &pool_);
    if (result != VK_SUCCESS) {
      pool_ = VK_NULL_HANDLE;
      return failWith(error, failureOf(result),
                      "vkCreateCommandPool failed (" + resultName(result) + ")");
    }
    VkCommandBufferAllocateInfo allocate = {};
    allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    allocate.commandPool = pool_;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    result = context_->vkAllocateCommandBuffers(context_->device, &allocate,
                                                &commands_);
    if (result != VK_SUCCESS)
      return failWith(error, failureOf(result),
                      "vkAllocateCommandBuffers failed (" + resultName(result) +
                          ")");
    VkFenceCreateInfo fenceInfo = {};
    fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    result = context_->vkCreateFence(context_->device, &fenceInfo, nullptr,
                                     &fence_);
    if (result != VK_SUCCESS) {
      fence_ = VK_NULL_HANDLE;
      return failWith(error, failureOf(result),
                      "vkCreateFence failed (" + resultName(result) + ")");
    }
    return true;
  }

  bool fill(hal::Buffer &buffer, uint64_t offset, uint64_t size,
            uint32_t pattern, int patternBytes, Error &error) override {
    VulkanBuffer *target = own(buffer, "fill", error);
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
    // vkCmdFillBuffer writes whole words: replicate the pattern to 32 bits.
    uint32_t word = pattern;
    if (patternBytes == 1)
      word = (pattern & 0xFF) * 0x01010101u;
    else if (patternBytes == 2)
      word = (pattern & 0xFFFF) * 0x00010001u;
    if (offset % 4 == 0 && size % 4 == 0) {
      submit([this, target, offset, size, word](Error &failure) {
        return record(failure, [&](VkCommandBuffer commands) {
          if (size)
            context_->vkCmdFillBuffer(commands, target->handle(), offset, size,
                                      word);
        });
      });
      return true;
    }
    // Unaligned ranges go through the host, byte-exact.
    auto bytes = std::make_shared<std::vector<uint8_t>>(size);
    for (uint64_t i = 0; i < size; ++i)
      (*bytes)[i] = static_cast<uint8_t>(word >> (8 * ((offset + i) % 4)));
    submit([this, target, offset, bytes](Error &failure) {
      return upload(bytes->data(), *target, offset, bytes->size(), failure);
    });
    return true;
  }

  bool copy(hal::Buffer &source, uint64_t sourceOffset, hal::Buffer &target,
            uint64_t targetOffset, uint64_t size, Error &error) override {
    VulkanBuffer *from = own(source, "copy", error);
    VulkanBuffer *to = from ? own(target, "copy", error) : nullptr;
    if (!to || !checkRange("copy (source)", *from, sourceOffset, size, error) ||
        !checkRange("copy (target)", *to, targetOffset, size, error))
      return false;
    if (from == to && sourceOffset < targetOffset + size &&
        targetOffset < sourceOffset + size)
      return failWith(error, Failure::InvalidInput,
                      "copy: the source and target ranges of one buffer "
                      "overlap; copy through a second buffer");
    submit([this, from, sourceOffset, to, targetOffset, size](Error &failure) {
      return record(failure, [&](VkCommandBuffer commands) {
        if (!size)
          return;
        VkBufferCopy region = {sourceOffset, targetOffset, size};
        context_->vkCmdCopyBuffer(commands, from->handle(), to->handle(), 1,
                                  &region);
      });
    });
    return true;
  }

  bool write(const void *host, hal::Buffer &target, uint64_t targetOffset,
             uint64_t size, Error &error) override {
    VulkanBuffer *to = own(target, "write", error);
    if (!to || !checkHost("write", host, size, error) ||
        !checkRange("write", *to, targetOffset, size, error))
      return false;
    submit([this, host, to, targetOffset, size](Error &failure) {
      return upload(host, *to, targetOffset, size, failure);
    });
    return true;
  }

  bool read(hal::Buffer &source, uint64_t sourceOffset, void *host,
            uint64_t size, Error &error) override {
    VulkanBuffer *from = own(source, "read", error);
    if (!from || !checkHost("read", host, size, error) ||
        !checkRange("read", *from, sourceOffset, size, error))
      return false;
    submit([this, from, sourceOffset, host, size](Error &failure) {
      if (size == 0)
        return true;
      if (from->hostPointer()) {
        std::memcpy(host,
                    static_cast<const uint8_t *>(from->hostPointer()) +
                        sourceOffset,
                    size);
        return true;
      }
      VulkanBuffer staging(context_, size, -1);
      if (!staging.create(context_->stagingType, true, failure))
        return false;
      if (!record(failure, [&](VkCommandBuffer commands) {
            VkBufferCopy region = {sourceOffset, 0, size};
            context_->vkCmdCopyBuffer(commands, from->handle(),
                                      staging.handle(), 1, &region);
          }))
        return false;
      std::memcpy(host, staging.hostPointer(), size);
      return true;
    });
    return true;
  }

private:
  VulkanBuffer *own(hal::Buffer &buffer, const char *what, Error &error) {
    auto *vulkanBuffer = dynamic_cast<VulkanBuffer *>(&buffer);
    if (!vulkanBuffer || vulkanBuffer->context() != context_.get()) {
      failWith(error, Failure::InvalidInput,
               std::string(what) +
                   ": the buffer belongs to another device; move it with a "
                   "transfer between the devices' queues first");
      return nullptr;
    }
    return vulkanBuffer;
  }
  static bool checkRange(const char *what, const VulkanBuffer &buffer,
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

  /// Host bytes into a buffer: directly when it is mapped, else through a
  /// staging buffer.
  bool upload(const void *host, VulkanBuffer &target, uint64_t offset,
              uint64_t size, Error &failure) {
    if (size == 0)
      return true;
    if (target.hostPointer()) {
      std::memcpy(static_cast<uint8_t *>(target.hostPointer()) + offset, host,
                  size);
      return true;
    }
    VulkanBuffer staging(context_, size, -1);
    if (!staging.create(context_->stagingType, true, failure))
      return false;
    std::memcpy(staging.hostPointer(), host, size);
    return record(failure, [&](VkCommandBuffer commands) {
      VkBufferCopy region = {0, offset, size};
      context_->vkCmdCopyBuffer(commands, staging.handle(), target.handle(), 1,
                                &region);
    });
  }

  /// Records `body` between barriers that order it after all earlier work
  /// (host writes included) and make its writes visible to the host, submits
  /// it and waits for it.
  template <typename Body> bool record(Error &failure, Body body) {
    const Context &c = *context_;
    c.vkResetCommandPool(c.device, pool_, 0);
    VkCommandBufferBeginInfo begin = {};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult result = c.vkBeginCommandBuffer(commands_, &begin);
    if (result != VK_SUCCESS)
      return failWith(failure, failureOf(result),
                      "vkBeginCommandBuffer failed (" + resultName(result) + ")");
    VkMemoryBarrier before = {};
    before.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    before.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
    before.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
    c.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT |
                                          VK_PIPELINE_STAGE_HOST_BIT,
                           VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &before, 0,
                           nullptr, 0, nullptr);
    body(commands_);
    VkMemoryBarrier after = {};
    after.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    after.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
    after.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT;
    c.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT |
                               VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                           0, 1, &after, 0, nullptr, 0, nullptr);
    result = c.vkEndCommandBuffer(commands_);
    if (result != VK_SUCCESS)
      return failWith(failure, failureOf(result),
                      "vkEndCommandBuffer failed (" + resultName(result) + ")");
    VkSubmitInfo submit = {};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    {
      std::lock_guard<std::mutex> lock(context_->submitMutex);
      result = c.vkQueueSubmit(c.queue, 1, &submit, fence_);
    }
    if (result != VK_SUCCESS)
      return failWith(failure, failureOf(result),
                      "vkQueueSubmit failed (" + resultName(result) + ")");
    result = c.vkWaitForFences(c.device, 1, &fence_, VK_TRUE, UINT64_MAX);
    c.vkResetFences(c.device, 1, &fence_);
    if (result != VK_SUCCESS)
      return failWith(failure, failureOf(result),
                      "vkWaitForFences failed (" + resultName(result) + ")");
    return true;
  }

  std::shared_ptr<Context> context_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

class VulkanDevice final : public hal::Device {
public:
  VulkanDevice(std::shared_ptr<Context> context, hal::DeviceInfo info)
      : context_(std::move(context)), info_(std::move(info)) {}
  const hal::DeviceInfo &info() const override { return info_; }

  std::shared_ptr<hal::Buffer> allocate(int memorySpace, uint64_t size,
                                        Error &error) override {
    if (memorySpace < 0 ||
        static_cast<size_t>(memorySpace) >= info_.memories.size()) {
      failWith(error, Failure::InvalidInput,
               info_.name + " has " + std::to_string(info_.memories.size()) +
                   " memory spaces; " + std::to_string(memorySpace) +
                   " is not one of them");
      return nullptr;
    }
    const hal::MemorySpaceInfo &space = info_.memories[memorySpace];
    if (space.capacityBytes && size > space.capacityBytes) {
      failWith(error, Failure::OutOfMemory,
               info_.name + ": a buffer of " + std::to_string(size) +
                   " bytes is more than the " +
                   std::to_string(space.capacityBytes) + " bytes of its \"" +
                   space.name + "\" memory; allocate less");
      return nullptr;
    }
    auto buffer = std::make_shared<VulkanBuffer>(context_, size, memorySpace);
    if (!buffer->create(context_->spaceTypes[memorySpace],
                        context_->spaceHostVisible[memorySpace], error)) {
      error.message = info_.name + ": " + error.message;
      return nullptr;
    }
    return buffer;
  }

  std::unique_ptr<hal::Queue> createQueue(Error &error) override {
    auto queue = std::make_unique<VulkanQueue>(context_);
    if (!queue->create(error)) {
      error.message = info_.name + ": " + error.message;
      return nullptr;
    }
    return queue;
  }

  std::shared_ptr<hal::Event> createEvent(uint64_t initialValue,
                                          Error &) override {
    return std::make_shared<hal::HostEvent>(initialValue);
  }

private:
  std::shared_ptr<Context> context_;
  hal::DeviceInfo info_;
};

/// The best memory type with `required` flags, preferring ones without
/// `avoided`; -1 when none.
int pickType(const VkPhysicalDeviceMemoryProperties &memory,
             VkMemoryPropertyFlags required, VkMemoryPropertyFlags avoided) {
  int fallback = -1;
  for (uint32_t t = 0; t < memory.memoryTypeCount; ++t) {
    VkMemoryPropertyFlags flags = memory.memoryTypes[t].propertyFlags;
    if ((flags & required) != required)
      continue;
    if (!(flags & avoided))
      return static_cast<int>(t);
    if (fallback < 0)
      fallback = static_cast<int>(t);
  }
  return fallback;
}

std::shared_ptr<hal::Device> openDevice(const std::shared_ptr<Instance> &instance,
                                        VkPhysicalDevice physical, int index,
                                        std::string &why) {
  VkPhysicalDeviceProperties properties;
  instance->vkGetPhysicalDeviceProperties(physical, &properties);
  std::string name = properties.deviceName;
  if (properties.apiVersion < VK_API_VERSION_1_2) {
    why = "vulkan: " + name + " supports Vulkan " +
          std::to_string(VK_API_VERSION_MAJOR(properties.apiVersion)) + "." +
          std::to_string(VK_API_VERSION_MINOR(properties.apiVersion)) +
          ", and hetc needs 1.2";
    return nullptr;
  }
  uint32_t familyCount = 0;
  instance->vkGetPhysicalDeviceQueueFamilyProperties(physical, &familyCount,
                                                     nullptr);
  std::vector<VkQueueFamilyProperties> families(familyCount);
  instance->vkGetPhysicalDeviceQueueFamilyProperties(physical, &familyCount,
                                                     families.data());
  int family = -1;
  for (uint32_t f = 0; f < familyCount && family < 0; ++f)
    if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT)
      family = static_cast<int>(f);
  if (family < 0) {
    why = "vulkan: " + name + " has no compute queue";
    return nullptr;
  }
  auto context = std::make_shared<Context>();
  context->instance = instance;
  context->physical = physical;
  context->queueFamily = static_cast<uint32_t>(family);
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo = {};
  queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queueInfo.queueFamilyIndex = context->queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo deviceInfo = {};
  deviceInfo.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  VkResult result =
      instance->vkCreateDevice(physical, &deviceInfo, nullptr, &context->device);
  if (result != VK_SUCCESS) {
    context->device = VK_NULL_HANDLE;
    why = "vulkan: vkCreateDevice failed for " + name + " (" +
          resultName(result) + ")";
    return nullptr;
  }
#define HETRT_VK_LOAD_DEVICE(fn)                                               \
  context->fn = reinterpret_cast<PFN_##fn>(                                    \
      instance->vkGetDeviceProcAddr(context->device, #fn));                    \
  if (!context->fn) {                                                          \
    why = "vulkan: the driver of " + name + " lacks " #fn;                     \
    return nullptr;                                                            \
  }
  HETRT_VK_DEVICE_FUNCTIONS(HETRT_VK_LOAD_DEVICE)
#undef HETRT_VK_LOAD_DEVICE
  context->vkGetDeviceQueue(context->device, context->queueFamily, 0,
                            &context->queue);

  // Memory spaces: the device's own memory, and host memory it reaches when
  // that is another type (a discrete GPU); on unified memory (lavapipe,
  // integrated GPUs) one type is both and there is one space.
  instance->vkGetPhysicalDeviceMemoryProperties(physical, &context->memory);
  const VkPhysicalDeviceMemoryProperties &memory = context->memory;
  constexpr VkMemoryPropertyFlags kHost =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int local = pickType(memory, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  int host = pickType(memory, kHost, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (host < 0) {
    why = "vulkan: " + name + " has no host-visible coherent memory";
    return nullptr;
  }
  hal::DeviceInfo info;
  info.name = "vulkan" + std::to_string(index);
  info.kind = "vulkan";
  info.description =
      name + ", Vulkan " +
      std::to_string(VK_API_VERSION_MAJOR(properties.apiVersion)) + "." +
      std::to_string(VK_API_VERSION_MINOR(properties.apiVersion)) + "." +
      std::to_string(VK_API_VERSION_PATCH(properties.apiVersion));
  auto addSpace = [&](const char *spaceName, int type) {
    VkMemoryPropertyFlags flags = memory.memoryTypes[type].propertyFlags;
    bool visible = (flags & kHost) == kHost;
    uint32_t heap = memory.memoryTypes[type].heapIndex;
    info.memories.push_back({spaceName, memory.memoryHeaps[heap].size, visible});
    context->spaceTypes.push_back(static_cast<uint32_t>(type));
    context->spaceHostVisible.push_back(visible);
  };
  if (local >= 0)
    addSpace("device-local", local);
  if (local < 0 || host != local)
    addSpace("host-visible", host);
  context->stagingType = static_cast<uint32_t>(host);
  return std::make_shared<VulkanDevice>(context, std::move(info));
}

} // namespace

std::vector<std::shared_ptr<hal::Device>>
enumerateVulkanDevices(std::vector<std::string> &unavailable) {
  std::vector<std::shared_ptr<hal::Device>> devices;
  std::string why;
  std::shared_ptr<Instance> instance = createInstance(why);
  if (!instance) {
    unavailable.push_back(why);
    return devices;
  }
  uint32_t count = 0;
  instance->vkEnumeratePhysicalDevices(instance->handle, &count, nullptr);
  std::vector<VkPhysicalDevice> physical(count);
  instance->vkEnumeratePhysicalDevices(instance->handle, &count,
                                       physical.data());
  for (VkPhysicalDevice candidate : physical) {
    std::shared_ptr<hal::Device> device = openDevice(
        instance, candidate, static_cast<int>(devices.size()), why);
    if (device)
      devices.push_back(std::move(device));
    else
      unavailable.push_back(why);
  }
  if (physical.empty())
    unavailable.push_back("vulkan: the loader finds no Vulkan device (install "
                          "a driver; Debian's mesa-vulkan-drivers has "
                          "lavapipe, which runs on any CPU)");
  return devices;
}

} // namespace hetrt::vulkan
