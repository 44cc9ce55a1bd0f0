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

#include <array>
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
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkGetPhysicalDeviceFeatures2)                                              \
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
  X(vkResetFences)                                                             \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkResetDescriptorPool)                                                     \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdPushConstants)                                                        \
  X(vkCmdDispatch)

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
  VkPhysicalDeviceLimits limits = {};
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

/// A SPIR-V module with a compute pipeline per kernel, each with its
/// descriptor set layout (storage buffers at set 0) and push constants.
class VulkanExecutable final : public hal::Executable {
public:
  struct Pipeline {
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };

  VulkanExecutable(std::shared_ptr<Context> context,
                   std::vector<hal::KernelSignature> kernels)
      : Executable(std::move(kernels)), context_(std::move(context)) {}
  ~VulkanExecutable() override {
    const Context &c = *context_;
    for (const Pipeline &p : pipelines_) {
      if (p.pipeline)
        c.vkDestroyPipeline(c.device, p.pipeline, nullptr);
      if (p.layout)
        c.vkDestroyPipelineLayout(c.device, p.layout, nullptr);
      if (p.setLayout)
        c.vkDestroyDescriptorSetLayout(c.device, p.setLayout, nullptr);
    }
    if (module_)
      c.vkDestroyShaderModule(c.device, module_, nullptr);
  }

  bool create(const std::string &code, Error &error) {
    const Context &c = *context_;
    // A SPIR-V module is little-endian words starting with its magic number.
    constexpr uint32_t kSpirvMagic = 0x07230203;
    uint32_t magic = 0;
    if (code.size() >= 4)
      std::memcpy(&magic, code.data(), 4);
    if (code.size() < 20 || code.size() % 4 != 0 || magic != kSpirvMagic)
      return failWith(error, Failure::InvalidInput,
                      "the code is not a SPIR-V module (" +
                          std::to_string(code.size()) +
                          " bytes; a module is whole 32-bit words starting "
                          "with 0x07230203)");
    std::vector<uint32_t> words(code.size() / 4);
    std::memcpy(words.data(), code.data(), code.size());
    VkShaderModuleCreateInfo moduleInfo = {};
    moduleInfo.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    moduleInfo.codeSize = code.size();
    moduleInfo.pCode = words.data();
    VkResult result =
        c.vkCreateShaderModule(c.device, &moduleInfo, nullptr, &module_);
    if (result != VK_SUCCESS) {
      module_ = VK_NULL_HANDLE;
      return failWith(error, Failure::InvalidInput,
                      "vkCreateShaderModule refused the code (" +
                          resultName(result) + ")");
    }
    for (const hal::KernelSignature &kernel : kernels()) {
      if (kernel.bindings < 0 || kernel.bindings > 64 ||
          kernel.pushConstantBytes % 4 != 0 ||
          kernel.pushConstantBytes > c.limits.maxPushConstantsSize)
        return failWith(error, Failure::InvalidInput,
                        "kernel \"" + kernel.entryPoint + "\" asks for " +
                            std::to_string(kernel.bindings) + " bindings and " +
                            std::to_string(kernel.pushConstantBytes) +
                            " bytes of push constants; the device allows 0 to "
                            "64 bindings and " +
                            std::to_string(c.limits.maxPushConstantsSize) +
                            " bytes in whole words");
      Pipeline p;
      std::vector<VkDescriptorSetLayoutBinding> bindings(
          static_cast<size_t>(kernel.bindings));
      for (int b = 0; b < kernel.bindings; ++b) {
        bindings[b] = {};
        bindings[b].binding = static_cast<uint32_t>(b);
        bindings[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bindings[b].descriptorCount = 1;
        bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
      }
      VkDescriptorSetLayoutCreateInfo setInfo = {};
      setInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
      setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
      setInfo.pBindings = bindings.data();
      result = c.vkCreateDescriptorSetLayout(c.device, &setInfo, nullptr,
                                             &p.setLayout);
      if (result != VK_SUCCESS) {
        p.setLayout = VK_NULL_HANDLE;
        return failWith(error, failureOf(result),
                        "vkCreateDescriptorSetLayout failed (" +
                            resultName(result) + ")");
      }
      pipelines_.push_back(p);
      Pipeline &made = pipelines_.back();
      VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                   kernel.pushConstantBytes};
      VkPipelineLayoutCreateInfo layoutInfo = {};
      layoutInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
      layoutInfo.setLayoutCount = 1;
      layoutInfo.pSetLayouts = &made.setLayout;
      layoutInfo.pushConstantRangeCount = kernel.pushConstantBytes ? 1 : 0;
      layoutInfo.pPushConstantRanges = &range;
      result = c.vkCreatePipelineLayout(c.device, &layoutInfo, nullptr,
                                        &made.layout);
      if (result != VK_SUCCESS) {
        made.layout = VK_NULL_HANDLE;
        return failWith(error, failureOf(result),
                        "vkCreatePipelineLayout failed (" + resultName(result) +
                            ")");
      }
      VkComputePipelineCreateInfo pipelineInfo = {};
      pipelineInfo.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
      pipelineInfo.stage.sType =
          VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      pipelineInfo.stage.module = module_;
      pipelineInfo.stage.pName = kernel.entryPoint.c_str();
      pipelineInfo.layout = made.layout;
      result = c.vkCreateComputePipelines(c.device, VK_NULL_HANDLE, 1,
                                          &pipelineInfo, nullptr,
                                          &made.pipeline);
      if (result != VK_SUCCESS) {
        made.pipeline = VK_NULL_HANDLE;
        return failWith(error, Failure::InvalidInput,
                        "no compute pipeline for entry point \"" +
                            kernel.entryPoint + "\" (" + resultName(result) +
                            "); check the module declares it");
      }
    }
    return true;
  }

  const Pipeline &pipeline(int kernel) const { return pipelines_[kernel]; }
  const Context *context() const { return context_.get(); }

private:
  std::shared_ptr<Context> context_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  std::vector<Pipeline> pipelines_;
};

class VulkanQueue final : public hal::SerialQueue {
public:
  explicit VulkanQueue(std::shared_ptr<Context> context)
      : context_(std::move(context)) {}
  ~VulkanQueue() override {
    drain();
    if (fence_)
      context_->vkDestroyFence(context_->device, fence_, nullptr);
    if (descriptors_)
      context_->vkDestroyDescriptorPool(context_->device, descriptors_, nullptr);
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
    // One dispatch at a time per queue: a pool for one set of up to 64
    // storage buffers, reset before each dispatch.
    VkDescriptorPoolSize poolSize = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 64};
    VkDescriptorPoolCreateInfo descriptorInfo = {};
    descriptorInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    descriptorInfo.maxSets = 1;
    descriptorInfo.poolSizeCount = 1;
    descriptorInfo.pPoolSizes = &poolSize;
    result = context_->vkCreateDescriptorPool(context_->device, &descriptorInfo,
                                              nullptr, &descriptors_);
    if (result != VK_SUCCESS) {
      descriptors_ = VK_NULL_HANDLE;
      return failWith(error, failureOf(result),
                      "vkCreateDescriptorPool failed (" + resultName(result) +
                          ")");
    }
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
    if (!hal::checkFillPattern(offset, size, patternBytes, error))
      return false;
    if (!hal::checkRange("fill", offset, size, target->size(), error))
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
    if (!to || !hal::checkCopy(*from, sourceOffset, *to, targetOffset, size,
                               error))
      return false;
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
    if (!to || !hal::checkHostPointer("write", host, size, error) ||
        !hal::checkRange("write", targetOffset, size, to->size(), error))
      return false;
    submit([this, host, to, targetOffset, size](Error &failure) {
      return upload(host, *to, targetOffset, size, failure);
    });
    return true;
  }

  bool read(hal::Buffer &source, uint64_t sourceOffset, void *host,
            uint64_t size, Error &error) override {
    VulkanBuffer *from = own(source, "read", error);
    if (!from || !hal::checkHostPointer("read", host, size, error) ||
        !hal::checkRange("read", sourceOffset, size, from->size(), error))
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

  bool dispatch(hal::Executable &executable, int kernel,
                const uint32_t groups[3],
                const std::vector<hal::Buffer *> &bindings,
                const std::string &pushConstants, Error &error) override {
    auto *code = dynamic_cast<VulkanExecutable *>(&executable);
    if (!code || code->context() != context_.get())
      return failWith(error, Failure::InvalidInput,
                      "dispatch: the executable was loaded on another device");
    if (kernel < 0 || static_cast<size_t>(kernel) >= code->kernels().size())
      return failWith(error, Failure::InvalidInput,
                      "dispatch: kernel " + std::to_string(kernel) +
                          " is outside the executable's " +
                          std::to_string(code->kernels().size()));
    const hal::KernelSignature &signature = code->kernels()[kernel];
    if (bindings.size() != static_cast<size_t>(signature.bindings) ||
        pushConstants.size() != signature.pushConstantBytes)
      return failWith(error, Failure::InvalidInput,
                      "dispatch: kernel \"" + signature.entryPoint +
                          "\" takes " + std::to_string(signature.bindings) +
                          " buffers and " +
                          std::to_string(signature.pushConstantBytes) +
                          " bytes of push constants, not " +
                          std::to_string(bindings.size()) + " and " +
                          std::to_string(pushConstants.size()));
    const VkPhysicalDeviceLimits &limits = context_->limits;
    for (int d = 0; d < 3; ++d)
      if (groups[d] == 0 || groups[d] > limits.maxComputeWorkGroupCount[d])
        return failWith(error, Failure::InvalidInput,
                        "dispatch: " + std::to_string(groups[d]) +
                            " workgroups along dimension " + std::to_string(d) +
                            " are outside [1, " +
                            std::to_string(limits.maxComputeWorkGroupCount[d]) +
                            "]");
    std::vector<VulkanBuffer *> buffers;
    for (hal::Buffer *binding : bindings) {
      VulkanBuffer *buffer = binding ? own(*binding, "dispatch", error) : nullptr;
      if (!buffer)
        return binding ? false
                       : failWith(error, Failure::InvalidInput,
                                  "dispatch: a binding is null");
      buffers.push_back(buffer);
    }
    std::array<uint32_t, 3> count = {groups[0], groups[1], groups[2]};
    submit([this, code, kernel, count, buffers, pushConstants](Error &failure) {
      const Context &c = *context_;
      c.vkResetDescriptorPool(c.device, descriptors_, 0);
      const VulkanExecutable::Pipeline &p = code->pipeline(kernel);
      VkDescriptorSetAllocateInfo allocate = {};
      allocate.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
      allocate.descriptorPool = descriptors_;
      allocate.descriptorSetCount = 1;
      allocate.pSetLayouts = &p.setLayout;
      VkDescriptorSet set = VK_NULL_HANDLE;
      VkResult result = c.vkAllocateDescriptorSets(c.device, &allocate, &set);
      if (result != VK_SUCCESS)
        return failWith(failure, failureOf(result),
                        "vkAllocateDescriptorSets failed (" +
                            resultName(result) + ")");
      std::vector<VkDescriptorBufferInfo> infos(buffers.size());
      std::vector<VkWriteDescriptorSet> writes(buffers.size());
      for (size_t b = 0; b < buffers.size(); ++b) {
        infos[b] = {buffers[b]->handle(), 0, VK_WHOLE_SIZE};
        writes[b] = {};
        writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[b].dstSet = set;
        writes[b].dstBinding = static_cast<uint32_t>(b);
        writes[b].descriptorCount = 1;
        writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[b].pBufferInfo = &infos[b];
      }
      if (!writes.empty())
        c.vkUpdateDescriptorSets(c.device, static_cast<uint32_t>(writes.size()),
                                 writes.data(), 0, nullptr);
      return record(failure, [&](VkCommandBuffer commands) {
        c.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                            p.pipeline);
        c.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  p.layout, 0, 1, &set, 0, nullptr);
        if (!pushConstants.empty())
          c.vkCmdPushConstants(commands, p.layout, VK_SHADER_STAGE_COMPUTE_BIT,
                               0, static_cast<uint32_t>(pushConstants.size()),
                               pushConstants.data());
        c.vkCmdDispatch(commands, count[0], count[1], count[2]);
      });
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
  VkDescriptorPool descriptors_ = VK_NULL_HANDLE;
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

  bool runs(hal::ExecutableFormat format) const override {
    return format == hal::ExecutableFormat::SpirV;
  }

  std::shared_ptr<hal::Executable>
  loadExecutable(hal::ExecutableFormat format, const std::string &code,
                 std::vector<hal::KernelSignature> kernels,
                 Error &error) override {
    if (format != hal::ExecutableFormat::SpirV) {
      failWith(error, Failure::Unsupported,
               info_.name + " runs SPIR-V executables only");
      return nullptr;
    }
    auto executable =
        std::make_shared<VulkanExecutable>(context_, std::move(kernels));
    if (!executable->create(code, error)) {
      error.message = info_.name + ": " + error.message;
      return nullptr;
    }
    return executable;
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

/// The features a device offers, queried once: the ones hetc's shaders may
/// use are enabled at device creation and listed as SPIR-V capabilities.
struct Features {
  VkPhysicalDeviceFeatures2 core = {};
  VkPhysicalDeviceVulkan11Features v11 = {};
  VkPhysicalDeviceVulkan12Features v12 = {};
  VkPhysicalDeviceSubgroupProperties subgroup = {};

  Features(const Instance &instance, VkPhysicalDevice physical) {
    v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    v11.pNext = &v12;
    core.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    core.pNext = &v11;
    instance.vkGetPhysicalDeviceFeatures2(physical, &core);
    // Bounds checks on every access cost real GPUs speed, and the runtime
    // checks every dispatch's buffers itself.
    core.features.robustBufferAccess = VK_FALSE;
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 properties = {};
    properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    properties.pNext = &subgroup;
    instance.vkGetPhysicalDeviceProperties2(physical, &properties);
  }
  Features(const Features &) = delete;
  Features &operator=(const Features &) = delete;
};

/// The SPIR-V a device with `features` runs, for an instance of Vulkan 1.2
/// (SPIR-V 1.5): capabilities from its enabled features and subgroup
/// operations in compute shaders; extensions that SPIR-V 1.5 made core.
hal::SpirvSupport spirvSupportOf(const Features &features) {
  hal::SpirvSupport support;
  support.version = 105;
  std::vector<std::string> &names = support.capabilities;
  names = {"Shader", "Matrix"};
  auto add = [&](VkBool32 enabled, const char *name) {
    if (enabled)
      names.push_back(name);
  };
  const VkPhysicalDeviceFeatures &core = features.core.features;
  add(core.shaderInt16, "Int16");
  add(core.shaderInt64, "Int64");
  add(core.shaderFloat64, "Float64");
  add(features.v12.shaderInt8, "Int8");
  add(features.v12.shaderFloat16, "Float16");
  add(features.v12.storageBuffer8BitAccess, "StorageBuffer8BitAccess");
  add(features.v12.uniformAndStorageBuffer8BitAccess,
      "UniformAndStorageBuffer8BitAccess");
  add(features.v11.storageBuffer16BitAccess, "StorageBuffer16BitAccess");
  add(features.v11.uniformAndStorageBuffer16BitAccess, "StorageUniform16");
  add(features.v11.variablePointersStorageBuffer,
      "VariablePointersStorageBuffer");
  add(features.v11.variablePointers, "VariablePointers");
  const VkPhysicalDeviceSubgroupProperties &subgroup = features.subgroup;
  if (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) {
    support.subgroupSize = subgroup.subgroupSize;
    VkSubgroupFeatureFlags ops = subgroup.supportedOperations;
    add(ops & VK_SUBGROUP_FEATURE_BASIC_BIT, "GroupNonUniform");
    add(ops & VK_SUBGROUP_FEATURE_VOTE_BIT, "GroupNonUniformVote");
    add(ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "GroupNonUniformArithmetic");
    add(ops & VK_SUBGROUP_FEATURE_BALLOT_BIT, "GroupNonUniformBallot");
    add(ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "GroupNonUniformShuffle");
    add(ops & VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT,
        "GroupNonUniformShuffleRelative");
    add(ops & VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "GroupNonUniformClustered");
    add(ops & VK_SUBGROUP_FEATURE_QUAD_BIT, "GroupNonUniformQuad");
  }
  support.extensions = {
      "SPV_KHR_storage_buffer_storage_class", "SPV_KHR_16bit_storage",
      "SPV_KHR_variable_pointers",            "SPV_KHR_8bit_storage",
      "SPV_KHR_shader_float_controls",        "SPV_KHR_vulkan_memory_model",
      "SPV_KHR_physical_storage_buffer",      "SPV_EXT_descriptor_indexing"};
  return support;
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
  context->limits = properties.limits;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo = {};
  queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queueInfo.queueFamilyIndex = context->queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  Features features(*instance, physical);
  VkDeviceCreateInfo deviceInfo = {};
  deviceInfo.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  deviceInfo.pNext = &features.core;
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
  info.spirv = spirvSupportOf(features);
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
